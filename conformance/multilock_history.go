package conformance

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMultiLockHistory has competing Clients take overlapping sets of
// three names, with a MultiLock for two or three of them and a Mutex for
// one, so that both kinds of lease meet on each name; then it checks the
// recorded history against the model: every name has one holder at most.
func testMultiLockHistory(t *testing.T, e env) {
	ctx, base := ctxFor(t, 5*time.Minute), name(t)
	const clients = 4
	rounds, total := e.historyLength(t, 10)
	sets := [][]string{{"a", "b"}, {"b", "c"}, {"a", "c"}, {"a", "b", "c"}, {"a"}, {"b"}, {"c"}}
	h := newHistory()
	var (
		wg       sync.WaitGroup
		acquired atomic.Int64
	)
	errs := make(chan error, clients)
	for i := range clients {
		c := e.client(t, core.WithTTL(time.Second), fastPoll)
		wg.Go(func() {
			for r := 0; r < rounds && (total == 0 || acquired.Load() < total); r++ {
				set := sets[(i*3+r)%len(sets)]
				names := make([]string, len(set))
				for k, s := range set {
					names[k] = base + "/" + s
				}
				lock, try := c.MultiLock(names).Lock, r%4 == 0
				if len(names) == 1 {
					lock = c.Mutex(names[0]).Lock
				}
				if try && len(names) == 1 {
					lock = c.Mutex(names[0]).TryLock
				} else if try {
					lock = c.MultiLock(names).TryLock
				}
				call := time.Now()
				l, err := lock(ctx)
				// A failed acquisition is not in the history (models.go).
				if (errors.Is(err, core.ErrNotAcquired) && try) || errors.Is(err, core.ErrNoQuorum) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				acquired.Add(1)
				held := h.acquired(i, leaseOp{Names: strings.Join(slices.Sorted(slices.Values(set)), ",")}, call, l)
				time.Sleep(time.Duration(r%3) * time.Millisecond)
				if err := held.release(func() error { return l.Unlock(ctx) }); !released(err) {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	h.checkCount(t, max(total, clients*10/3))
	h.check(t, multiModel())
}
