package conformance

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMultiLockHistory has competing Clients take overlapping sets of
// three names, with a MultiLock for two or three of them and a Mutex for
// one, so that both kinds of lease meet on each name; then it checks the
// recorded history against the model: every name has one holder at most.
func testMultiLockHistory(t *testing.T, e env) {
	ctx, base := ctxFor(t, 2*time.Minute), name(t)
	const clients = 4
	rounds := 10
	if e.longHistory(t) {
		rounds = 60
	}
	sets := [][]string{{"a", "b"}, {"b", "c"}, {"a", "c"}, {"a", "b", "c"}, {"a"}, {"b"}, {"c"}}
	h := newHistory()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		c := e.client(t, core.WithTTL(time.Second))
		wg.Go(func() {
			for r := range rounds {
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
				held := h.acquired(i, leaseOp{Names: strings.Join(slices.Sorted(slices.Values(set)), ",")}, call, l)
				time.Sleep(time.Duration(r%3) * time.Millisecond)
				err = held.release(func() error { return l.Unlock(ctx) })
				if err != nil && !errors.Is(err, core.ErrLost) && !errors.Is(err, core.ErrNoQuorum) {
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
	if got := h.count(func(in any) bool { return !in.(leaseOp).End }); got < clients*rounds/3 {
		t.Fatalf("only %d acquisitions in %d rounds of %d clients: too few to check", got, rounds, clients)
	}
	h.check(t, multiModel())
}
