package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
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

// testHostileFenceOwnedLapsedTicket is HostileFenceCounterOwned on a name
// whose tickets hash holds a ticket that lapsed (a waiter that died; its
// join keeps the hash a TTL longer): the owner's attempt, refused for the
// malformed counter, must write nothing, the hash and its expiry included.
func testHostileFenceOwnedLapsedTicket(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	stem := lockKey(n)
	e.everyNode(t, func(r redis.UniversalClient) error {
		if err := r.Set(ctx, fenceKey(n), "nan", time.Minute).Err(); err != nil {
			return err
		}
		now, err := r.Time(ctx).Result()
		if err != nil {
			return err
		}
		lapsed := fmt.Sprintf("%d:o:dead", now.Add(-time.Second).UnixMilli())
		if err := r.HSet(ctx, ticketsKey(stem), ticketKey(stem, "dead:ticket"), lapsed).Err(); err != nil {
			return err
		}
		return r.Expire(ctx, ticketsKey(stem), time.Minute).Err()
	})
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if !strings.Contains(call.Op, "Acquire") {
			return faults.Fault{Kind: faults.Drop} // no undo: what the attempt wrote stays
		}
		return faults.Fault{}
	}, core.WithNodeTimeout(time.Second), core.WithTTL(5*time.Second))
	before := e.nameState(t, ctx, n)
	l, err := c.Mutex(n, core.WithOwner("a")).TryLock(ctx)
	if err == nil {
		l.Unlock(ctx)
		t.Fatal("acquired over a malformed counter, want ErrServerError")
	}
	if !errors.Is(err, core.ErrServerError) {
		t.Fatalf("%v; want ErrServerError", err)
	}
	if after := e.nameState(t, ctx, n); !maps.Equal(before, after) {
		t.Fatalf("the refused attempt wrote: the nodes held %v, now %v", before, after)
	}
}
