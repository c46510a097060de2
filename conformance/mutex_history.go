package conformance

import (
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMutexHistory has competing Clients take one lock again and again,
// with TryLock and Lock, holding it for a moment, and two of them abandon
// a lease to expire; then it checks the recorded history against the lock
// model (at most one holder): no two validity windows overlap.
func testMutexHistory(t *testing.T, e env) {
	ctx, n := ctxFor(t, 5*time.Minute), name(t)
	const clients, abandonAt = 4, 6
	rounds, total := e.historyLength(t, 12)
	h := newHistory()
	var (
		wg       sync.WaitGroup
		acquired atomic.Int64
	)
	errs := make(chan error, clients)
	for i := range clients {
		// A short TTL, so that the abandoned leases expire soon.
		m := e.client(t, fastPoll).Mutex(n, core.WithTTL(300*time.Millisecond))
		wg.Go(func() {
			for r := 0; r < rounds && (total == 0 || acquired.Load() < total); r++ {
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
				acquired.Add(1)
				held := h.acquired(i, leaseOp{}, call, l)
				time.Sleep(time.Duration(r%4) * time.Millisecond)
				if r == abandonAt && i%2 == 0 {
					<-l.Done()
					held.expired()
					continue
				}
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
	h.checkCount(t, max(total, clients*12/3))
	h.check(t, capacityModel(1))
}

// long reports whether this is the cell that runs the long versions of
// the cases (thousands of operations): one per topology keeps the suite
// short, and none on five nodes (see ops).
func (e env) long() bool {
	return e.h.Driver == "goredis" && e.server == "redis7" && e.strategy == core.Poll && len(e.addrs) < 5
}

// fastPoll keeps a polling waiter's retries under a millisecond, so that
// the long histories (where a release is noticed at the next poll) stay
// short.
var fastPoll = core.WithBackoff(core.Backoff{Base: 100 * time.Microsecond, Cap: time.Millisecond, Multiplier: 2})

// historyLength returns how many rounds each client of a history case
// runs and how many acquisitions it records in all: short cells run
// rounds each (total 0: no minimum), the long cell runs until 5,000
// acquisitions, 10,000 operations with their releases.
func (e env) historyLength(t *testing.T, rounds int) (int, int64) {
	if e.longHistory(t) {
		return math.MaxInt, 5000
	}
	return rounds, 0
}
