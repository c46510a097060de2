package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testLostUndoRetried: X holds the one permit of a semaphore on nodes 0
// and 1 (its request to node 2 was dropped). W's TryAcquire is refused
// there and given the permit on node 2; its undo there is lost (dropped).
// The undo is asked again: node 2's permit is free within 2s, not held
// until the 10s TTL.
func testLostUndoRetried(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	last := len(e.addrs) - 1
	drop := func(op string) faults.Hook {
		var s faults.Schedule
		s.Add(faults.Rule{Node: last, Op: op, Nth: 1, Fault: faults.Fault{Kind: faults.Drop}})
		return s.Hook
	}
	ttl := core.WithTTL(10 * time.Second)
	x, _ := e.faultyClient(t, drop("SemaphoreAcquire"), ttl)
	held, err := x.Semaphore(n, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatalf("X's TryAcquire, lost on node %d: %v", last, err)
	}
	defer held.Unlock(ctx)
	w, _ := e.faultyClient(t, drop("SemaphoreRelease"), ttl)
	if _, err := w.Semaphore(n, 1).TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("W's TryAcquire while X holds a majority: got %v, want ErrNotAcquired", err)
	}
	admin := e.admin(t, last)
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		taken, err := admin.ZCard(ctx, semKey(n, "")).Result()
		if err == nil && taken == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d still holds %d permits (%v) 2s after W's attempt, whose undo there was lost: it was not asked again", last, taken, err)
		}
	}
}
