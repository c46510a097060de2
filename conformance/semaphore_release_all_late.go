package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testReleaseAllMarksLateAttempt: a lease's attempt held back on the
// way to one node, and its holder's undo there lost (that node was out
// of its reach), lands after another Client gave the lease's permits
// back by permit ID. The give-back must refuse it there, as Release does
// (it marks the attempt where it finds nothing: see
// ReleaseByIDMarksForLeaseTTL): else that node gives the permit to a
// lease given back, for the lease's TTL. Release runs first, as the
// control, then ReleaseAll.
func testReleaseAllMarksLateAttempt(t *testing.T, e env) {
	for _, give := range []struct {
		name string
		back func(ctx context.Context, s *core.Semaphore, id string) error
	}{
		{"Release", func(ctx context.Context, s *core.Semaphore, id string) error { return s.Release(ctx, id) }},
		{"ReleaseAll", func(ctx context.Context, s *core.Semaphore, id string) error { return s.ReleaseAll(ctx, id) }},
	} {
		t.Run(give.name, func(t *testing.T) {
			ctx, n := ctxFor(t, 40*time.Second), name(t)
			last := len(e.addrs) - 1
			w, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
				switch {
				case c.Node == last && c.Op == "SemaphoreAcquire" && c.N == 1:
					return later
				case c.Node == last && c.Op == "SemaphoreRelease":
					return faults.Fault{Kind: faults.Drop} // the holder's undo there is lost
				}
				return faults.Fault{}
			}, core.WithTTL(30*time.Second))
			l, err := w.Semaphore(n, 1).TryAcquire(ctx, 1)
			if err != nil {
				t.Fatalf("TryAcquire: %v", err)
			}
			other := e.client(t).Semaphore(n, 1, core.WithTTL(time.Second))
			if err := give.back(ctx, other, l.ID()); err != nil {
				t.Fatalf("%s of the lease: %v", give.name, err)
			}
			time.Sleep(1500 * time.Millisecond) // well within the attempt's 30s TTL
			flush(fds)
			if held := e.heldSlots(t, ctx, last, n); held != 0 {
				t.Fatalf("node %d holds %d permits after the attempt of a lease that %s gave back landed there late, want 0: it holds it for the lease's 30s TTL", last, held, give.name)
			}
		})
	}
}

// testReleaseAllLostReplyDecides: with a quorum, a lease held on a bare
// majority (the other nodes never had it) is given back by ReleaseAll
// whose reply from node 0 is lost: node 0 gave the permits back, so a
// majority did, and the call must not report them not held (ErrNotHeld
// says a majority did not give them back). ReleaseAll asks node 0 again,
// whose call mark answers as the call did, and succeeds; Release, whose
// copy would answer "given back before", reports the outcome unknown
// (ErrNoQuorum).
func testReleaseAllLostReplyDecides(t *testing.T, e env) {
	for _, give := range []struct {
		op   string
		back func(ctx context.Context, s *core.Semaphore, id string) error
		want error
	}{
		{"SemaphoreRelease", func(ctx context.Context, s *core.Semaphore, id string) error { return s.Release(ctx, id) }, core.ErrNoQuorum},
		{"SemaphoreReleaseAll", func(ctx context.Context, s *core.Semaphore, id string) error { return s.ReleaseAll(ctx, id) }, nil},
	} {
		t.Run(give.op, func(t *testing.T) {
			ctx, n := ctxFor(t, 20*time.Second), name(t)
			l, err := e.client(t, core.WithTTL(time.Minute)).Semaphore(n, 1).TryAcquire(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			e.slotsOnEveryNode(t, ctx, n, l.ID())
			for i := len(e.addrs)/2 + 1; i < len(e.addrs); i++ { // a bare majority keeps it
				if err := e.admin(t, i).Del(ctx, semKey(n, ""), semKey(n, ":holders")).Err(); err != nil {
					t.Fatal(err)
				}
			}
			c, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
				if c.Node == 0 && c.Op == give.op && c.N == 1 {
					return faults.Fault{Kind: faults.LoseReply}
				}
				return faults.Fault{}
			})
			err = give.back(ctx, c.Semaphore(n, 1), l.ID())
			for i := range e.addrs {
				if held := e.heldSlots(t, ctx, i, n); held != 0 {
					t.Fatalf("node %d holds %d permits after %s", i, held, give.op)
				}
			}
			if errors.Is(err, core.ErrNotHeld) || !errors.Is(err, give.want) {
				t.Fatalf("%s, its reply from node 0 lost (asked %d times): %v, want %v; a majority gave the permits back, node 0 among them", give.op, fds[0].Calls(give.op), err, give.want)
			}
		})
	}
}
