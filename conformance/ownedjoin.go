package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testOwnedJoinLandsDuringLaterLease: an owner's queued waiter (Notify)
// takes a fresh lease token at every attempt but shares its queue ticket.
// Its first joining attempt (attempt 2) is held back (or duplicated) on a
// majority of nodes; it fails there as a timeout, and its undo (mark 0,
// the waiter waits on) leaves the ticket unmarked. The holder unlocks, a
// later attempt of the waiter wins, and while that lease holds, the held
// back attempt lands: the owner's hash is the waiter's own, so the attempt
// re-enters with its lease token, which no one holds. The waiter unlocks:
// the name must be free, not held by the phantom lease for its 30s TTL.
// The waiter is p's (see exclusiveLocks): an owner's Mutex, or an owner's
// MultiLock, whose attempts stop at the held name, its first.
func testOwnedJoinLandsDuringLaterLease(p string, kind faults.Kind) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 40*time.Second), name(t)
		// A Delay fails the attempt there: held back on the last node alone,
		// not to lose the round; a Duplicate on a majority.
		heldBack := func(node int) bool { return node == len(e.addrs)-1 }
		if kind == faults.Duplicate {
			heldBack = func(node int) bool { return node <= len(e.addrs)/2 }
		}
		w, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if heldBack(call.Node) && call.Op == "MutexAcquireOwned" && call.N == 2 {
				return faults.Fault{Kind: kind, After: time.Hour}
			}
			return faults.Fault{}
		}, core.WithTTL(30*time.Second))
		h, err := e.client(t, core.WithTTL(10*time.Second)).Mutex(n, core.WithOwner("holder")).Lock(ctx)
		if err != nil {
			t.Fatalf("holder: %v", err)
		}
		done := startLock(ctx, func(ctx context.Context) (*core.Lease, error) { return x.lock(ctx, w, n) })
		awaitCalls(t, fds[len(fds)-1], "MutexAcquireOwned", 2, done)
		time.Sleep(300 * time.Millisecond) // the attempt's undo ran
		if err := h.Unlock(ctx); err != nil {
			t.Fatalf("holder's Unlock: %v", err)
		}
		r := <-done
		if r.err != nil {
			t.Fatalf("waiter's Lock: %v", r.err)
		}
		flush(fds) // the held-back attempt lands while the waiter's lease holds
		if err := r.l.Unlock(ctx); err != nil {
			t.Fatalf("waiter's Unlock: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
		if l, err := e.client(t).Mutex(n, core.WithOwner("other")).TryLock(ctx); err != nil {
			t.Errorf("another owner's TryLock after every lease was released: %v; last node holds %v", err, e.admin(t, len(e.addrs)-1).HGetAll(ctx, lockKey(n)).Val())
		} else {
			l.Unlock(ctx)
		}
		e.gone(t, ctx, 3*time.Second, lockKey(n))
	}
}
