package conformance

import (
	"math"
	"os"
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
	ms := make([]*core.Mutex, clients)
	for i := range ms {
		// A short TTL, so that the abandoned leases expire soon.
		ms[i] = e.client(t, fastPoll).Mutex(n, core.WithTTL(300*time.Millisecond))
	}
	compete(t, clients, func(i, r int) (bool, error) {
		if r >= rounds || (total > 0 && h.taken.Load() >= total) {
			return false, nil
		}
		try := r%3 == 0
		lock := ms[i].Lock
		if try {
			lock = ms[i].TryLock
		}
		l, held, ok, err := h.take(ctx, i, leaseOp{}, try, lock)
		if !ok {
			return err == nil, err
		}
		time.Sleep(time.Duration(r%4) * time.Millisecond)
		if r == abandonAt && i%2 == 0 {
			<-l.Done()
			held.expired()
			return true, nil
		}
		err = held.unlock(ctx, l)
		return err == nil, err
	})
	h.checkCount(t, max(total, clients*12/3))
	h.check(t, capacityModel(1))
}

// long reports whether this is the cell that runs the long versions of
// the cases (thousands of operations): one per topology keeps the suite
// short, and none on five nodes (see ops). The Cluster's runs on Valkey,
// the others' on Redis, so that the two servers' runs of go-redis, which
// the matrix runs side by side, share them.
func (e env) long() bool {
	server := "redis7"
	if e.cluster {
		server = "valkey9"
	}
	return e.h.Driver == "goredis" && e.server == server && e.strategy == core.Poll && len(e.addrs) < 5
}

// fastPoll keeps a polling waiter's retries under a millisecond, so that
// the long histories (where a release is noticed at the next poll) stay
// short.
var fastPoll = core.WithBackoff(core.Backoff{Base: 100 * time.Microsecond, Cap: time.Millisecond, Multiplier: 2})

// historyLength returns how many rounds each client of a history case
// runs and how many acquisitions it records in all: short cells run
// rounds each (total 0: no minimum), the long cell runs until
// longAcquisitions.
func (e env) historyLength(t *testing.T, rounds int) (int, int64) {
	if e.longHistory(t) {
		return math.MaxInt, longAcquisitions()
	}
	return rounds, 0
}

// longAcquisitions is how many acquisitions the long cell of a history
// case records: 1,500 (3,000 operations with their releases), or 5,000
// in a long run (REDLOCK_LONG=1), which takes minutes per case.
func longAcquisitions() int64 {
	if os.Getenv("REDLOCK_LONG") == "1" {
		return 5000
	}
	return 1500
}
