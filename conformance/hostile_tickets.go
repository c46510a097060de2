package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testHostileTicketsReleaseWritesNothing hands the lock to a queued
// waiter, then makes its line's tickets hash a string (another program's
// key under the name): the release of the waiter's lease, which marks its
// ticket, fails (WRONGTYPE) and must write nothing (the lock stays), as
// every script that fails does.
func testHostileTicketsReleaseWritesNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.hostileClient(t).Mutex(n).TryLock)
	got := e.waiter(t, ctx, e.hostileClient(t).Mutex(n, core.WithTTL(5*time.Second)))
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiting Lock: %v", r.err)
	}
	e.everyNode(t, func(c redis.UniversalClient) error {
		return c.Set(ctx, ticketsKey(lockKey(n)), "x", time.Minute).Err()
	})
	before := e.stringsUnder(t, ctx, lockKey(n))
	uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.l.Unlock(uctx); err == nil {
		t.Fatal("Unlock over a tickets hash that is a string: no error")
	}
	after := e.stringsUnder(t, ctx, lockKey(n))
	for k, v := range after {
		if before[k] != v {
			t.Errorf("a failed release wrote %s: it held %q, holds %q", k, before[k], v)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			t.Errorf("a failed release deleted %s", k)
		}
	}
}
