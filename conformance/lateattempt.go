package conformance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testLateAttemptAfterGiveUp: a waiter's attempt that joins the line (its
// first that may) is held back on a majority of nodes (on the one node),
// so it fails with ErrNoQuorum; the waiter waits that out, is refused by
// the holder, and gives up at its context's end, leaving the line; the
// attempt lands after that. Landing then, it must neither queue the
// waiter again nor take the lock for it: else the holder's release hands
// the lock to a waiter that is gone, and no one can take it until that
// grant expires.
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
		// A Lock waits out a majority timing out; its later attempts are
		// refused by the holder (on a loaded machine the context may end
		// before one was), and its context ends.
		wait, cancel := cancelledAfter(ctx, time.Second)
		defer cancel()
		if _, err = x.lock(wait, c, n); !errors.Is(err, context.Canceled) {
			t.Fatalf("the waiter's Lock with one attempt held back on %d nodes, refused after: got %v, want context.Canceled", quorum, err)
		}
		c.Close() // waits for the leave, which may run in the background
		flush(fds)
		// The waiter's calls have all landed: its leave, then the attempts
		// held back.
		if err := holder.Unlock(ctx); err != nil {
			t.Fatalf("the holder's Unlock: %v", err)
		}
		if err := takenSoon(ctx, x.lock, e.client(t), n); err != nil {
			queued := 0
			for i := range e.addrs {
				if k, _ := e.admin(t, i).ZCard(ctx, x.line(n)).Result(); k > 0 {
					queued++
				}
			}
			t.Fatalf("a Lock after the release, with no one else waiting: %v (%d nodes have waiters in line, after the waiter gave up and its held-back attempts landed)", err, queued)
		}
	}
}

// testLateTryLockRefused: a TryLock's acquisition is held back on the last
// node until after the lease it belongs to was released (on one node,
// until the attempt timed out and was undone): that release found nothing
// there, and marked the attempt. The acquisition lands after the mark,
// which must refuse it, or between the release and the mark, which the
// release must then undo: either way it must not hold the node until
// its TTL. For a plain lock and an owner's. For a plain lock, the
// release's reply is also lost (it ran and found nothing, as it can on a
// stalled server that runs it before the acquisition sent earlier on
// another connection): the mark must still be made.
//
// A plain TryLock's acquisition reads no mark on a free name (the
// uncontended path pays no command for it): landing after the mark, it
// holds the node as a phantom, for at most its TTL, and the case checks
// that instead (see phantomWithinTTL). Landing before the mark, it is
// released by it.
func testLateTryLockRefused(t *testing.T, e env) {
	for kind, x := range map[string]struct {
		op    string
		owner core.Option
	}{"plain": {"MutexAcquire", core.WithOwner("")}, "owned": {"MutexAcquireOwned", core.WithOwner("late-owner")}} {
		for _, landing := range []string{"afterMark", "beforeMark", "releaseReplyLost"} {
			if landing == "releaseReplyLost" && kind == "owned" {
				continue
			}
			t.Run(kind+"/"+landing, func(t *testing.T) { lateTryLockRefused(t, e, x.op, x.owner, landing) })
		}
	}
}

func lateTryLockRefused(t *testing.T, e env, op string, owner core.Option, landing string) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	last := len(e.addrs) - 1
	beforeMark := landing == "beforeMark"
	var fds []*faults.Driver
	var mu sync.Mutex
	releases := 0 // of the lock key on the last node (c.N counts the probes of native commands too)
	hook := func(c faults.Call) faults.Fault {
		marks := c.Op == "ReleaseOrMark" || c.Op == "ReleaseOwned"
		release := (c.Op == "Release" || c.Op == "ReleaseWake") && c.Node == last && slices.Contains(c.Keys, lockKey(n))
		mu.Lock()
		if release {
			releases++
		}
		first := releases == 1
		mu.Unlock()
		switch {
		case c.Node != last || !slices.Contains(c.Keys, lockKey(n)) && !marks:
		case c.Op == op && c.N == 1 && beforeMark:
			return later // fails at once, as a timeout; reaches the server at the flush
		case c.Op == op && c.N == 1:
			return faults.Fault{Kind: faults.Stall, After: time.Hour} // fails at its node timeout
		case marks && beforeMark:
			fds[last].Flush() // the acquisition lands after the release, before the mark
		case release && first && landing == "releaseReplyLost":
			return faults.Fault{Kind: faults.LoseReply}
		}
		return faults.Fault{}
	}
	ttl, phantom := time.Minute, op == "MutexAcquire" && !beforeMark
	if phantom {
		ttl = 3 * time.Second // the phantom's hold, waited out
	}
	cl, f := e.faultyClient(t, hook, core.WithTTL(ttl), core.WithNodeTimeout(time.Second), owner)
	fds = f
	defer flush(fds)
	l, err := cl.Mutex(n).TryLock(ctx)
	switch {
	case last == 0 && !errors.Is(err, core.ErrNoQuorum):
		t.Fatalf("TryLock with its acquisition held back on the only node: got %v, want ErrNoQuorum", err)
	case last > 0 && err != nil:
		t.Fatalf("TryLock with its acquisition held back on node %d: %v", last, err)
	case last > 0:
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
	}
	if phantom {
		phantomWithinTTL(t, e, ctx, n, ttl, func() { flush(fds) })
		return
	}
	flush(fds) // the acquisition has landed on the last node
	if v, err := e.admin(t, last).Exists(ctx, lockKey(n)).Result(); err != nil || v != 0 {
		ttl := e.admin(t, last).PTTL(ctx, lockKey(n)).Val()
		t.Fatalf("node %d: the acquisition that landed after its release holds the lock (for %v more; %v)", last, ttl.Round(time.Second), err)
	}
	other, err := e.client(t).Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("another client's TryLock after the late acquisition landed: %v", err)
	}
	other.Unlock(ctx)
}
