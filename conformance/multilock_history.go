package conformance

import (
	"slices"
	"strings"
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
	cs := make([]*core.Client, clients)
	for i := range cs {
		cs[i] = e.client(t, core.WithTTL(time.Second), fastPoll)
	}
	compete(t, clients, func(i, r int) (bool, error) {
		if r >= rounds || (total > 0 && h.taken.Load() >= total) {
			return false, nil
		}
		c, set := cs[i], sets[(i*3+r)%len(sets)]
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
		l, held, ok, err := h.take(ctx, i, leaseOp{Names: strings.Join(slices.Sorted(slices.Values(set)), ",")}, try, lock)
		if !ok {
			return err == nil, err
		}
		time.Sleep(time.Duration(r%3) * time.Millisecond)
		err = held.unlock(ctx, l)
		return err == nil, err
	})
	h.checkCount(t, max(total, clients*10/3))
	h.check(t, multiModel())
}
