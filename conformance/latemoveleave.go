package conformance

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testMultiLateMoveLeave: a MultiLock waiter W over {a, b} waits at a (A
// holds it), then at b (B holds it). Its attempts are held back on
// the last node, X, so after each refused round it leaves, on X, the line
// of the name it does not wait at (a move, not for good): those leaves are
// held back too. W wins on the other nodes; its won leave and its lease's
// release mark both its tickets on X as left. Then the move-leaves land,
// then the attempts: the marks must still refuse them, or they take both
// names on X for W's TTL, a hold no lease releases.
func testMultiLateMoveLeave(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	names := []string{n, n + "/2"}
	x := len(e.addrs) - 1
	const ttl = 10 * time.Second
	var moving atomic.Bool
	moving.Store(true)
	var mu sync.Mutex
	moved := map[string]string{} // lock key: the ticket of a move-leave held back on X
	// Two layers on X, each flushed on its own: the leaves land first.
	ds := e.drivers(t, e.addrs)
	inner, attempts := faults.Wrap(ds[x], x, func(c faults.Call) faults.Fault {
		if c.Op == "MultiLockAcquire" {
			return later
		}
		return faults.Fault{}
	})
	outer, leaves := faults.Wrap(inner, x, func(c faults.Call) faults.Fault {
		if c.Op == "MutexLeave" && moving.Load() {
			mu.Lock()
			moved[c.Keys[0]] = c.Tickets[0]
			mu.Unlock()
			return later
		}
		return faults.Fault{}
	})
	ds[x] = outer
	w := e.clientOver(t, ds, core.WithTTL(ttl))
	hc := e.client(t, core.WithTTL(ttl))
	held := make([]*core.Lease, len(names))
	for i, nm := range names {
		l, err := hc.Mutex(nm).Lock(ctx)
		if err != nil {
			t.Fatalf("holder of %s: %v", nm, err)
		}
		held[i] = l
	}
	done := startLock(ctx, w.MultiLock(names).Lock)
	// awaitMoved waits for W's move-leave of name's line on X, and returns
	// its ticket there.
	awaitMoved := func(nm string) string {
		deadline := time.Now().Add(5 * time.Second)
		for {
			mu.Lock()
			k := moved[lockKey(nm)]
			mu.Unlock()
			if k != "" {
				return k
			}
			select {
			case r := <-done:
				t.Fatalf("the waiter's Lock returned (%v) before it left %s's line on node %d", r.err, nm, x)
			case <-time.After(10 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the waiter did not leave %s's line on node %d in 5s", nm, x)
			}
		}
	}
	tickets := map[string]string{names[1]: awaitMoved(names[1])} // W waits at a
	if err := held[0].Unlock(ctx); err != nil {
		t.Fatalf("A's Unlock: %v", err)
	}
	tickets[names[0]] = awaitMoved(names[0]) // W waits at b
	moving.Store(false)
	if err := held[1].Unlock(ctx); err != nil {
		t.Fatalf("B's Unlock: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("W's Lock after the releases: %v", r.err)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatalf("W's Unlock: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for nm, k := range tickets {
		for e.ticketValues(t, ctx, x, lockKey(nm))[k] != "left" {
			if time.Now().After(deadline) {
				t.Fatalf("node %d: W's ticket %s is not marked left 2s after its lease's release", x, k)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	leaves.Flush()   // the move-leaves land
	attempts.Flush() // then the attempts
	// The names are free on every node well before W's TTL (10s) ends.
	e.gone(t, ctx, 2*time.Second, lockKey(names[0]), lockKey(names[1]))
}
