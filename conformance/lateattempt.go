package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testLateAttemptAfterGiveUp: a waiter's attempt that joins the line (its
// first that may) is held back on a
// majority of nodes (on the one node), so the waiter gives up with
// ErrNoQuorum and leaves the line; the attempt lands after that. Landing then, it must neither queue the waiter again
// nor take the lock for it: else the holder's release hands the lock to
// a waiter that is gone, and no one can take it until that grant expires.
func testLateAttemptAfterGiveUp(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 30*time.Second), name(t)
		quorum, joins := len(e.addrs)/2+1, 1 // the attempt that joins the line
		if x.late && e.strategy == core.Notify {
			joins = 2
		}
		c, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if call.Node < quorum && call.Op == x.acquire && call.N == joins {
				return later
			}
			return faults.Fault{}
		}, core.WithTTL(10*time.Second))
		holder, err := x.lock(ctx, e.client(t), n)
		if err != nil {
			t.Fatalf("the holder's Lock: %v", err)
		}
		// A majority timing out, the waiter gives up at once.
		if _, err = x.lock(ctx, c, n); !errors.Is(err, core.ErrNoQuorum) {
			t.Fatalf("the waiter's Lock with its attempt held back on %d nodes: got %v, want ErrNoQuorum", quorum, err)
		}
		c.Close() // waits for the leave, which may run in the background
		flush(fds)
		// The waiter's calls have all landed: its leave, then the attempts
		// held back.
		if err := holder.Unlock(ctx); err != nil {
			t.Fatalf("the holder's Unlock: %v", err)
		}
		soon, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		l, err := x.lock(soon, e.client(t), n)
		if err != nil {
			queued := 0
			for i := range e.addrs {
				if k, _ := e.admin(t, i).ZCard(ctx, x.line(n)).Result(); k > 0 {
					queued++
				}
			}
			t.Fatalf("a Lock after the release, with no one else waiting: %v (%d nodes have waiters in line, after the waiter gave up and its held-back attempts landed)", err, queued)
		}
		l.Unlock(ctx)
	}
}
