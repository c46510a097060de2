package conformance

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testHostileSemaphoreForeign puts in a semaphore's line a member that
// is not one of its tickets (another key under its hash tag), one that is
// the line itself, and a ticket holding no count of permits: an attempt
// skips and drops them.
func testHostileSemaphoreForeign(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	stem := semKey(n, "")
	q, foreign, bad := semKey(n, ":q"), reprefixed("hostile:", ticketKey(stem, "zz:v")), ticketKey(stem, "zz:bad")
	e.everyNode(t, func(r redis.UniversalClient) error {
		r.Set(ctx, foreign, "1", time.Minute)
		if err := putTicket(ctx, r, stem, bad, "many", time.Minute); err != nil {
			return err
		}
		return r.ZAdd(ctx, q, redis.Z{Score: 0, Member: q}, redis.Z{Score: 1, Member: foreign},
			redis.Z{Score: 2, Member: bad}).Err()
	})
	l, err := e.hostileClient(t).Semaphore(n, 2).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatalf("TryAcquire with foreign members in line: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if nodes, left := e.unpurged(t, ctx, q); nodes > e.tolerated() {
		t.Errorf("%d foreign members are still in line on %d nodes", left, nodes)
	}
}

// testHostileSemaphoreDeadTickets has a line of dead tickets: acquisitions
// and releases still work, each purging a bounded number of them.
func testHostileSemaphoreDeadTickets(t *testing.T, e env) {
	ctx, n := ctxFor(t, 2*time.Minute), name(t)
	s, count := e.hostileClient(t).Semaphore(n, 2), e.ops(10000)
	e.seed(t, ctx, semKey(n, ":q"), count, func(i int) float64 { return float64(i) }, member(ticketKey(semKey(n, ""), "zz:")))
	e.drains(t, ctx, semKey(n, ":q"), count, func() error {
		l, err := s.TryAcquire(ctx, 1)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	})
}

// testHostileSemaphoreExpired leaves a backlog of expired permits: they
// count as free at once, and each call purges a bounded number of them.
func testHostileSemaphoreExpired(t *testing.T, e env) {
	ctx, n := ctxFor(t, 2*time.Minute), name(t)
	count := e.ops(10000)
	size := count + 10
	s := e.hostileClient(t).Semaphore(n, size)
	e.seed(t, ctx, semKey(n, ""), count, func(int) float64 { return 1 }, func(i int) string { return strconv.Itoa(i + 1) })
	e.drains(t, ctx, semKey(n, ""), count, func() error {
		l, err := s.TryAcquire(ctx, 3)
		if err != nil {
			return err
		}
		if free, err := s.Available(ctx); err != nil || free != size-3 {
			t.Fatalf("Available with 3 taken: (%d, %v), want %d", free, err, size-3)
		}
		return l.Unlock(ctx)
	})
}

// testHostileSemaphoreLimits checks the documented limits: more permits
// or a larger n is refused before anything is written, and the largest n
// works.
func testHostileSemaphoreLimits(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.hostileClient(t)
	if _, err := c.Semaphore(n, core.MaxSemaphorePermits+1).TryAcquire(ctx, 1); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("TryAcquire on a semaphore of MaxSemaphorePermits+1: got %v, want ErrInvalid", err)
	}
	if err := c.Semaphore(n, 1).SetPermits(ctx, core.MaxSemaphorePermits+1); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("SetPermits(MaxSemaphorePermits+1): got %v, want ErrInvalid", err)
	}
	s := c.Semaphore(n, core.MaxSemaphoreAcquire+1)
	if _, err := s.TryAcquire(ctx, core.MaxSemaphoreAcquire+1); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("TryAcquire(MaxSemaphoreAcquire+1): got %v, want ErrInvalid", err)
	}
	if _, err := s.Acquire(ctx, core.MaxSemaphoreAcquire+1); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Acquire(MaxSemaphoreAcquire+1): got %v, want ErrInvalid", err)
	}
	if ks := e.keysUnder(t, ctx, 0, lockKey(n)); len(ks) != 0 {
		t.Fatalf("refused calls wrote keys: %v", ks)
	}
	l, err := s.TryAcquire(ctx, core.MaxSemaphoreAcquire)
	if err != nil {
		t.Fatalf("TryAcquire(MaxSemaphoreAcquire): %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testHostileSemaphoreLarge takes, extends and releases permits of a
// semaphore of the most permits: its slot numbers exceed what Lua prints
// exactly by default (14 digits).
func testHostileSemaphoreLarge(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.hostileClient(t).Semaphore(n, core.MaxSemaphorePermits)
	for range 3 {
		l, err := s.TryAcquire(ctx, 3)
		if err != nil {
			t.Fatalf("TryAcquire: %v", err)
		}
		if err := l.Extend(ctx, 10*time.Second); err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if free, err := s.Available(ctx); err != nil || free != core.MaxSemaphorePermits-3 {
			t.Fatalf("Available: (%d, %v), want %d", free, err, core.MaxSemaphorePermits-3)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
}

// testHostileSemaphoreHoldersList rewrites a lease's list of slots (t:<token>
// in the holders hash) as its first slot many times over, then its real
// list: the release reads no more entries than the lease has permits, so
// it stops early (the list is not one the lease wrote) and says the lease
// did not hold them all, rather than working through the whole list.
func testHostileSemaphoreHoldersList(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l, err := e.hostileClient(t).Semaphore(n, 10).TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	e.everyNode(t, func(r redis.UniversalClient) error {
		all, err := r.HGetAll(ctx, semKey(n, ":holders")).Result()
		if err != nil {
			return err
		}
		for field, list := range all {
			if token, ok := strings.CutPrefix(field, holdersTokenField); ok && token != "" {
				first, _, _ := strings.Cut(list, ",")
				if err := r.HSet(ctx, semKey(n, ":holders"), field, strings.Repeat(first+",", e.ops(10000))+list).Err(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err := l.Unlock(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Errorf("Unlock of a lease whose list repeats its first slot: got %v, want ErrNotHeld (the list is not the lease's)", err)
	}
}
