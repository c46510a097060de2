package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testHostileQueueReleaseWritesNothing hands the lock to a queued waiter,
// then makes its line a string: the release of the waiter's lease fails
// (WRONGTYPE) and must write nothing, its ticket among the rest, as every
// script that fails does.
func testHostileQueueReleaseWritesNothing(t *testing.T, e env) {
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
	e.everyNode(t, func(c redis.UniversalClient) error { return c.Set(ctx, queueKey(n), "x", time.Minute).Err() })
	before := e.stringsUnder(t, ctx, lockKey(n))
	uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.l.Unlock(uctx); err == nil {
		t.Fatal("Unlock over a line that is a string: no error")
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

// stringsUnder is the value of every string key under prefix, by node and
// key.
func (e env) stringsUnder(t *testing.T, ctx context.Context, prefix string) map[string]string {
	t.Helper()
	values := map[string]string{}
	for i := range e.addrs {
		for _, k := range e.keysUnder(t, ctx, i, prefix) {
			if v, err := e.admin(t, i).Get(ctx, k).Result(); err == nil {
				values[e.addrs[i]+" "+k] = v
			}
		}
	}
	return values
}
