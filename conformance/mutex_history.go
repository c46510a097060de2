package conformance

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMutexHistory has competing Clients take one lock again and again,
// with TryLock and Lock, holding it for a moment, and two of them abandon
// a lease to expire; then it checks the recorded history against the lock
// model (at most one holder): no two validity windows overlap.
func testMutexHistory(t *testing.T, e env) {
	ctx, n := ctxFor(t, 60*time.Second), name(t)
	const clients = 4
	rounds := 12
	if e.longHistory(t) {
		rounds = 100
	}
	h := newHistory()
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for i := range clients {
		// A short TTL, so that the abandoned leases expire soon.
		m := e.client(t).Mutex(n, core.WithTTL(300*time.Millisecond))
		wg.Go(func() {
			for r := range rounds {
				call := time.Now()
				var l *core.Lease
				var err error
				if r%3 == 0 {
					l, err = m.TryLock(ctx)
				} else {
					l, err = m.Lock(ctx)
				}
				// A failed acquisition is not in the history: under Redlock
				// it says nothing about the lock (see models.go). ErrNoQuorum
				// is a node that was slow to answer on a loaded machine.
				if (errors.Is(err, core.ErrNotAcquired) && r%3 == 0) || errors.Is(err, core.ErrNoQuorum) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				held := h.acquired(i, leaseOp{}, call, l)
				time.Sleep(time.Duration(r%4) * time.Millisecond)
				if r == rounds/2 && i%2 == 0 {
					<-l.Done()
					held.expired()
					continue
				}
				// A lease that ran out while held (a stalled machine) is
				// ErrLost; the history has its window end at the deadline.
				// After ErrNoQuorum the holder no longer relies on it either.
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
	h.check(t, capacityModel(1))
}

// long reports whether this is the cell that runs the long versions of
// the cases (thousands of operations): one per topology keeps the suite
// short, and none on five nodes (see ops).
func (e env) long() bool {
	return e.h.Driver == "goredis" && e.server == "redis7" && e.strategy == core.Poll && len(e.addrs) < 5
}
