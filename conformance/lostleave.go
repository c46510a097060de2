package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// leaveOps is the operation of package spec with which a waiter of each
// primitive leaves the line when it gives up.
var leaveOps = map[string]string{
	"Mutex":     "MutexLeave",
	"FairMutex": "FairMutexRelease",
	"RWMutex":   "RWMutexRelease",
	"Semaphore": "SemaphoreRelease",
}

// lostLeaves is how many leaves in a row the cases drop on a node.
const lostLeaves = 3

// testLostLeaveRetried: a waiter gives up, and its leave is dropped on
// node 0, and so are the next two. The waiter must ask again until one
// lands: its entry is gone from the line on every node within two seconds,
// long before it would lapse (the TTL, 10s). Else a release there grants or wakes a waiter that is gone, and
// the lock waits for it. (A holder's own entry may stay in line while it
// holds.)
func testLostLeaveRetried(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		holder, err := x.lock(ctx, e.client(t), n)
		if err != nil {
			t.Fatalf("the holder's Lock: %v", err)
		}
		waiter, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if call.Node == 0 && call.Op == leaveOps[p] && call.N <= lostLeaves {
				return faults.Fault{Kind: faults.Drop}
			}
			return faults.Fault{}
		}, core.WithTTL(10*time.Second))
		before := e.card(t, ctx, x.line(n))
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		got := e.inLine(t, ctx, x.line(n), before+1, func(context.Context) (*core.Lease, error) { return x.lock(short, waiter, n) })
		if r := <-got; !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("the waiter's Lock past its deadline: got %v, want context.DeadlineExceeded", r.err)
		}
		e.expectCard(t, ctx, x.line(n), before, "after the waiter gave up, its first three leaves on node 0 dropped")
		if err := holder.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}
