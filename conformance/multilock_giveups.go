package conformance

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMultiGiveUps has Clients take overlapping sets of four names while
// most of their waits give up: a deadline of 5-300ms, or WithMaxAttempts.
// A waiter that gives up leaves the queues it joined, as one refused at a
// name leaves the others; those leaves run on while the next attempt
// starts (the race detector watches them). No name ever has two holders.
func testMultiGiveUps(t *testing.T, e env) {
	ctx, base := ctxFor(t, time.Minute), name(t)
	names := []string{base + "/a", base + "/b", base + "/c", base + "/d"}
	holders := make([]atomic.Int32, len(names))
	var won atomic.Int64
	cs := make([]*core.Client, 6)
	for i := range cs {
		cs[i] = e.client(t, core.WithTTL(2*time.Second))
	}
	stop := time.Now().Add(2 * time.Second)
	compete(t, len(cs), func(i, r int) (bool, error) {
		if time.Now().After(stop) {
			return false, nil
		}
		c := cs[i]
		rnd := rand.New(rand.NewPCG(uint64(i), uint64(r)))
		picked := rnd.Perm(len(names))[:2+rnd.IntN(2)]
		set := make([]string, len(picked))
		for k, p := range picked {
			set[k] = names[p]
		}
		var opts []core.Option
		if rnd.IntN(4) == 0 {
			opts = append(opts, core.WithMaxAttempts(1+rnd.IntN(3)))
		}
		wctx, cancel := context.WithTimeout(ctx, time.Duration(5+rnd.IntN(300))*time.Millisecond)
		l, err := c.MultiLock(set, opts...).Lock(wctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, core.ErrNotAcquired), errors.Is(err, core.ErrNoQuorum):
			return true, nil
		case err != nil:
			return false, err
		}
		won.Add(1)
		for _, p := range picked {
			if holders[p].Add(1) != 1 {
				t.Errorf("%s has two holders", names[p])
			}
		}
		time.Sleep(time.Duration(rnd.IntN(3)) * time.Millisecond)
		for _, p := range picked {
			holders[p].Add(-1)
		}
		if err := l.Unlock(ctx); err != nil && !errors.Is(err, core.ErrNoQuorum) {
			return false, err
		}
		return true, nil
	})
	if won.Load() == 0 {
		t.Error("no MultiLock won in 2s")
	}
}
