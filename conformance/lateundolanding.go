package conformance

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testTryUndoLandsLate: a TryLock whose attempt is refused on every
// node but the last, where it is held back (it fails at once, as a
// timeout), fails; its undo runs on the last node and finds nothing
// there. The holder then unlocks, and the held-back attempt lands on the
// now free last node: it must be refused (the undo found nothing and
// should have marked it), not hold the name there for the TTL.
func testTryUndoLandsLate(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 40*time.Second), name(t)
		last := len(e.addrs) - 1
		w, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
			if c.Node == last && c.Op == x.acquire && c.N == 1 {
				return later
			}
			return faults.Fault{}
		}, core.WithTTL(30*time.Second))
		holder := x.holder
		if holder == nil {
			holder = x.lock
		}
		hl, err := holder(ctx, e.client(t, core.WithTTL(10*time.Second)), n)
		if err != nil {
			t.Fatalf("holder: %v", err)
		}
		if _, err := x.try(ctx, w, n); err == nil {
			t.Fatalf("the TryLock won while the name is held")
		} else if !errors.Is(err, core.ErrNotAcquired) && !errors.Is(err, core.ErrNoQuorum) {
			t.Logf("TryLock: %v", err)
		}
		time.Sleep(300 * time.Millisecond) // the undo ran; w.Close would land the held-back call
		if err := hl.Unlock(ctx); err != nil {
			t.Fatalf("holder's Unlock: %v", err)
		}
		flush(fds)                              // the TryLock's attempt lands now, after its undo
		e.gone(t, ctx, 3*time.Second, x.key(n)) // a phantom hold lasts 30s
	}
}

// testFirstLandsAfterUnlock: a Lock with no one holding the name wins
// with its first attempt on every node but the last, where that attempt
// is held back (it fails at once, as a timeout). The lease unlocks; then
// the attempt lands on the free last node. It must be refused there (the
// release found nothing and must have marked what the attempt carries),
// not hold the name for the TTL. Under Notify a queued MultiLock's first
// attempt does not join, so it carries the shared no-queue ticket, while
// its lease's release marks only its queue tickets.
func testFirstLandsAfterUnlock(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 40*time.Second), name(t)
		last := len(e.addrs) - 1
		w, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
			if c.Node == last && c.Op == x.acquire && c.N == 1 {
				return later
			}
			return faults.Fault{}
		}, core.WithTTL(30*time.Second))
		l, err := x.lock(ctx, w, n)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v", err)
		}
		w.Close()                               // waits for what runs in the background
		flush(fds)                              // the first attempt lands now, after the Unlock
		e.gone(t, ctx, 3*time.Second, x.key(n)) // a phantom hold lasts 30s
	}
}

// testKeptGrantAfterLostRelease: on three nodes H holds the lock and W
// waits in line on every node. H unlocks: nodes 0 and 1 hand the lock on
// to W, which holds its lease; H's release on node 2 is held back, so W
// stays in line there, and W's leave of node 2's line (the nodes that did
// not grant it) is held back too. W unlocks: its release on node 2 is lost
// (nodes 0 and 1 confirm it). Then H's release lands on node 2 and grants
// the lock to W's ticket, still at the head of the line there, with W's
// token; then W's leave lands. Before, the leave handed that grant on;
// with keep it stays: node 2 is held by W's token, whose lease is over,
// for W's TTL, and nobody releases it.
func testKeptGrantAfterLostRelease(t *testing.T, e env) {
	ctx, n := ctxFor(t, 40*time.Second), name(t)
	last := len(e.addrs) - 1
	const ttl = 30 * time.Second
	hc, hfds := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Node == last && (c.Op == "ReleaseWake" || c.Op == "ReleaseOrMark" || c.Op == "Release") {
			return later
		}
		return faults.Fault{}
	}, core.WithTTL(ttl))
	var unlocking atomic.Bool
	w, wfds := e.faultyClient(t, func(c faults.Call) faults.Fault {
		switch {
		case c.Node == last && c.Op == "MutexLeave":
			return later
		case c.Node == last && unlocking.Load() && (c.Op == "ReleaseOrMark" || c.Op == "ReleaseWake" || c.Op == "Release"):
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(ttl))
	h, err := hc.Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	got := e.inLine(t, ctx, lockKey(n)+":q", 1, func(ctx context.Context) (*core.Lease, error) { return w.Mutex(n).Lock(ctx) })
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
	var r locked
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatalf("the waiter does not hold the lock 5s after the release")
	}
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	time.Sleep(300 * time.Millisecond) // the won leave is out (held back)
	unlocking.Store(true)
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatalf("waiter's Unlock: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	flush(hfds) // H's release lands on node 2: it grants W's ticket
	time.Sleep(100 * time.Millisecond)
	t.Logf("node %d after H's release: lock %q", last, e.admin(t, last).Get(ctx, lockKey(n)).Val())
	flush(wfds)                               // W's leave lands
	e.gone(t, ctx, 3*time.Second, lockKey(n)) // a phantom hold lasts 30s
}

// testFirstLandsAfterGiveUp: a Lock's first attempt is held back on a
// majority (it fails there at once, as a timeout), so Lock gives up with
// ErrNoQuorum and undoes it. The holder then unlocks and the held-back
// attempts land on the free nodes: they must be refused, not take the
// name for the waiter's TTL.
func testFirstLandsAfterGiveUp(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 40*time.Second), name(t)
		quorum := len(e.addrs)/2 + 1
		w, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
			if c.Node < quorum && c.Op == x.acquire && c.N == 1 {
				return later
			}
			return faults.Fault{}
		}, core.WithTTL(30*time.Second))
		holder := x.holder
		if holder == nil {
			holder = x.lock
		}
		hl, err := holder(ctx, e.client(t, core.WithTTL(10*time.Second)), n)
		if err != nil {
			t.Fatalf("holder: %v", err)
		}
		if _, err := x.lock(ctx, w, n); !errors.Is(err, core.ErrNoQuorum) {
			t.Fatalf("Lock with its first attempt held back on a majority: got %v, want ErrNoQuorum", err)
		}
		time.Sleep(500 * time.Millisecond) // the leaves and give-backs ran; w.Close would land the held-back calls
		if err := hl.Unlock(ctx); err != nil {
			t.Fatalf("holder's Unlock: %v", err)
		}
		flush(fds)
		e.gone(t, ctx, 3*time.Second, x.key(n)) // a phantom hold lasts 30s
	}
}
