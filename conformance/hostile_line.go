package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testHostileFairGhost puts an entry in a FairMutex's line without its
// lapse time (as a volatile eviction of the lapse set leaves it): it is
// dead, and must not keep the lock from anyone.
func testHostileFairGhost(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.ZAdd(ctx, fairKey(n, ":q"), redis.Z{Score: 1, Member: "ghost"}).Err()
	})
	m := e.hostileClient(t).FairMutex(n)
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with a ghost in line: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.ZAdd(ctx, fairKey(n, ":q"), redis.Z{Score: 0, Member: "ghost2"}).Err()
	})
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if l, err = m.Lock(wctx); err != nil {
		t.Fatalf("Lock with a ghost first in line: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if nodes, left := e.unpurged(t, ctx, fairKey(n, ":q")); nodes > e.tolerated() {
		t.Errorf("%d ghosts are still in line on %d nodes", left, nodes)
	}
}

// testHostileFairMalformed puts first in line live entries whose tickets a
// grant cannot use (no TTL; a TTL that is not an integer): they are
// dropped, and the lock goes to the next attempt.
func testHostileFairMalformed(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	e.everyNode(t, func(r redis.UniversalClient) error {
		stem := fairKey(n, "")
		if err := putTicket(ctx, r, stem, ticketKey(stem, "hash"), "ttl", time.Minute); err != nil {
			return err
		}
		if err := putTicket(ctx, r, stem, ticketKey(stem, "inf"), "1e400:x", time.Minute); err != nil {
			return err
		}
		r.ZAdd(ctx, fairKey(n, ":lapse"), redis.Z{Score: far(), Member: "hash"}, redis.Z{Score: far(), Member: "inf"})
		return r.ZAdd(ctx, fairKey(n, ":q"), redis.Z{Score: 1, Member: "hash"}, redis.Z{Score: 2, Member: "inf"}).Err()
	})
	l, err := e.hostileClient(t).FairMutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with malformed tickets first in line: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testHostileFairBacklog leaves a FairMutex's line full of lapsed entries:
// a free lock is still taken at once, and each call purges a bounded
// number of them.
func testHostileFairBacklog(t *testing.T, e env) {
	ctx, n := ctxFor(t, 2*time.Minute), name(t)
	m, count := e.hostileClient(t).FairMutex(n), e.ops(10000)
	e.seed(t, ctx, fairKey(n, ":q"), count, func(i int) float64 { return float64(i) }, member("lapsed"))
	e.seed(t, ctx, fairKey(n, ":lapse"), count, func(int) float64 { return 1 }, member("lapsed"))
	e.drains(t, ctx, fairKey(n, ":lapse"), count, func() error { return takeAndRelease(ctx, m.TryLock) })
}

// testHostileRWReaderBacklog leaves a backlog of lapsed read leases: a
// writer still takes the free lock at once, and each call purges a
// bounded number of them.
func testHostileRWReaderBacklog(t *testing.T, e env) {
	ctx, n := ctxFor(t, 2*time.Minute), name(t)
	m, count := e.hostileClient(t).RWMutex(n), e.ops(10000)
	e.seed(t, ctx, rwKey(n, ":r"), count, func(int) float64 { return 1 }, member("lapsed"))
	e.drains(t, ctx, rwKey(n, ":r"), count, func() error { return takeAndRelease(ctx, m.TryLock) })
}

// testHostileRWWaitingReaders has many readers wait (of one Client) while
// a writer holds the lock: its release wakes them without a message to
// each.
func testHostileRWWaitingReaders(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	count := e.ops(10000)
	e.seed(t, ctx, rwKey(n, ":rq"), count, func(int) float64 { return far() }, member("zz:"))
	sub := e.admin(t, 0).Subscribe(ctx, clientChannel("zz"))
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	l := mustLock(t, ctx, e.hostileClient(t).RWMutex(n).TryLock)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with %d readers waiting: %v", count, err)
	}
	got := 0
	timeout := time.After(time.Second)
	for ch := sub.Channel(); ; {
		select {
		case <-ch:
			got++
			continue
		case <-timeout:
		}
		break
	}
	if got > 1 {
		t.Fatalf("the release sent %d messages to one Client's %d waiting readers; want at most one", got, count)
	}
}

// testHostileRWMalformed puts a waiting writer with a ticket a grant
// cannot use (no TTL) first: it is dropped, and readers are let in.
func testHostileRWMalformed(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	e.everyNode(t, func(r redis.UniversalClient) error {
		stem := rwKey(n, "")
		if err := putTicket(ctx, r, stem, ticketKey(stem, "hash"), "ttl", time.Minute); err != nil {
			return err
		}
		return r.ZAdd(ctx, rwKey(n, ":wq"), redis.Z{Score: far(), Member: "hash"}).Err()
	})
	l, err := e.hostileClient(t).RWMutex(n).TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock with a malformed writer waiting: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
