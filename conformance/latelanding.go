package conformance

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testMultiWonPassesOnOldGrant: on three single servers a MultiLock
// waiter W over {a, b} joins a's line on node 1 with token stem+1 (its
// attempt 2). Its attempt 3 and that attempt's undo are dropped on node 1,
// so W rotates to stem+2; its later attempts time out on node 1 at once
// (held back: they land at the end), their undos find nothing there, so
// W keeps stem+2, and after each the waiter leaves b's line on node 1
// (keep, not for good), which clears joined[b]. The holder, a MultiLock
// over the same names, releases: nodes 0 and 2 grant both names to stem+2
// and W holds its lease from those grants; node 1 grants both names to
// stem+1, whose m: ticket is still at the head of a's line there
// (multi_release). W's won leave on node 1 passes on the earlier token's
// grant only for the names it thinks it joined (a), so b stays held on
// node 1 by stem+1: neither the lease's release (stem+2) nor anyone else
// releases it, a phantom hold for the TTL: the won leave goes to every
// name's line.
func testMultiWonPassesOnOldGrant(t *testing.T, e env) {
	ctx, n := ctxFor(t, 40*time.Second), name(t)
	names := []string{n, n + "/2"}
	const ttl = 10 * time.Second
	var mu sync.Mutex
	seen := 0
	w, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
		mu.Lock()
		defer mu.Unlock()
		if c.Node != 1 {
			return faults.Fault{}
		}
		switch {
		case c.Op == "MultiLockAcquire":
			seen = c.N
			switch {
			case c.N == 1 || c.N == 3:
				return faults.Fault{Kind: faults.Drop}
			case c.N >= 4:
				return later
			}
		case c.Op == "MultiLockRelease" && c.N <= 2:
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(ttl), core.WithMaxAttempts(1000), core.WithBackoff(core.Backoff{Base: 2 * time.Second, Cap: 2 * time.Second, Multiplier: 1}))
	hc := e.client(t, core.WithTTL(ttl))
	holder, err := hc.MultiLock(names).Lock(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	done := startLock(ctx, w.MultiLock(names).Lock)
	for {
		mu.Lock()
		s := seen
		mu.Unlock()
		if s >= 4 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the waiter returned early: %v", r.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	time.Sleep(100 * time.Millisecond)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
	l := heldWithin(t, done, 3*time.Second)
	time.Sleep(500 * time.Millisecond) // the won leave runs in the background
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("waiter's Unlock: %v", err)
	}
	flush(fds)
	time.Sleep(200 * time.Millisecond)
	for i := range e.addrs {
		for _, nm := range names {
			if v := e.admin(t, i).Get(ctx, lockKey(nm)).Val(); v != "" {
				t.Errorf("node %d: after the waiter's Unlock %s is still held by %q for %v: nobody will release it",
					i, lockKey(nm), v, e.admin(t, i).PTTL(ctx, lockKey(nm)).Val().Round(time.Second))
			}
		}
	}
}

// heldWithin returns the waiter's lease from got, failing t unless it
// holds the lock within d of the release.
func heldWithin(t *testing.T, got <-chan locked, d time.Duration) *core.Lease {
	t.Helper()
	var r locked
	select {
	case r = <-got:
	case <-time.After(d):
		t.Fatalf("the waiter does not hold the lock %v after the release", d)
	}
	if r.err != nil {
		t.Fatalf("waiter: %v", r.err)
	}
	return r.l
}

// testFirstUndoLandsLate: a Notify waiter's first attempt (it does
// not queue yet, so it has a mark ticket, token stem+0) takes the free
// last node but is refused on the others, so the round undoes it there.
// The undo's ReleaseWake times out at once and lands only later; the
// ReleaseOrMark sent behind it releases the attempt's lock and answers 1,
// so the undo counts as done: the waiter keeps stem+0 (no rotation). Its
// later attempt wins nodes 1 and 2 with stem+0. Then the first
// ReleaseWake lands on node 2 and deletes the lease's lock there: another
// client then takes nodes 0 and 2 while the lease is valid. An undo whose
// first release got no answer is unsure, whatever the second says.
func testFirstUndoLandsLate(t *testing.T, e env) {
	ctx, n := ctxFor(t, 40*time.Second), name(t)
	w, fds := e.firstHeldBack(t, "ReleaseWake", core.WithTTL(10*time.Second))
	// Someone holds node 0 for long, node 1 for a moment.
	if err := e.admin(t, 0).Set(ctx, lockKey(n), "someone", 20*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.admin(t, 1).Set(ctx, lockKey(n), "someone", 1500*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	l, err := w.Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	defer l.Unlock(context.Background())
	flush(fds) // the first attempt's undo lands now
	e.admin(t, 0).Del(ctx, lockKey(n))
	other, err := e.client(t).Mutex(n).TryLock(ctx)
	if err == nil {
		defer other.Unlock(ctx)
		if l.Err() == nil && time.Now().Before(l.Until()) {
			t.Fatalf("another client holds the lock (token %d) while the waiter's lease (token %d) is valid for %v: node 2 lock %q",
				other.Token(), l.Token(), time.Until(l.Until()).Round(time.Millisecond), e.admin(t, len(e.addrs)-1).Get(ctx, lockKey(n)).Val())
		}
	}
}

// testLeaveBehindSparesLease: on three nodes a queued waiter W wins with
// its attempt's reply lost on node 2 (it ran there: node 2 holds W's
// token), and leaves node 2's line, as a waiter that won leaves the lines
// of the nodes that did not grant it; that leave is held back. W extends
// to 10 s: the extension is lost on node 0 and lands on node 2, so two
// nodes confirm it. Then the leave lands. It must keep the lock W's
// token holds there, part of W's lease now: handing it on leaves W on
// node 1 alone once node 0's key expired, and a TryLock of another
// Client wins nodes 0 and 2 while W's lease is valid.
//
// W's attempt finds node 2 free only if the holder's lock expired there
// first; on a busy machine it may land a moment before and W wins on
// nodes 0 and 1 alone, which proves nothing: the case tries again.
func testLeaveBehindSparesLease(t *testing.T, e env) {
	inTries(t, 5, "the waiter never won with node 2 holding its token",
		func(try int) bool { return leaveBehindSparesLease(t, e, fmt.Sprintf("%s/%d", name(t), try)) })
}

// leaveBehindSparesLease is one try of testLeaveBehindSparesLease on the
// lock n; false when node 2 did not hold the waiter's token.
func leaveBehindSparesLease(t *testing.T, e env, n string) bool {
	ctx := ctxFor(t, 30*time.Second)
	w, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
		switch {
		case c.Node == 2 && c.Op == "MutexAcquire" && c.N >= 3:
			return faults.Fault{Kind: faults.LoseReply}
		case c.Node == 2 && c.Op == "MutexLeave":
			return later
		case c.Node == 0 && c.Op == "Extend":
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(time.Second))
	if _, err := e.client(t, core.WithTTL(time.Second)).Mutex(n).Lock(ctx); err != nil {
		t.Fatalf("holder: %v", err)
	}
	l, err := w.Mutex(n).Lock(ctx) // wins when the holder's lock expires
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if on2, on1 := e.admin(t, 2).Get(ctx, lockKey(n)).Val(), e.admin(t, 1).Get(ctx, lockKey(n)).Val(); on2 != on1 {
		t.Logf("node 2 holds %q, not the waiter's %q: again", on2, on1)
		return false
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("the waiter's Extend, confirmed by nodes 1 and 2: %v", err)
	}
	flush(fds)                                                              // the leave lands on node 2
	for admin := e.admin(t, 0); admin.Exists(ctx, lockKey(n)).Val() == 1; { // it expires at its 1 s TTL
		time.Sleep(20 * time.Millisecond)
	}
	if l2, err := e.client(t).Mutex(n).TryLock(ctx); err == nil {
		t.Fatalf("another Client's TryLock won (token %d) while the waiter's extended lease is valid until %v from now: the waiter's leave handed on node 2",
			l2.Token(), time.Until(l.Until()).Round(time.Millisecond))
	}
	return true
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
	}, core.WithTTL(ttl), core.WithNodeTimeout(time.Second)) // a join timed out on a loaded machine is retried only at H's TTL
	h, err := hc.Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	got := e.inLine(t, ctx, queueKey(n), 1, func(ctx context.Context) (*core.Lease, error) { return w.Mutex(n).Lock(ctx) })
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
	l := heldWithin(t, got, 5*time.Second)
	time.Sleep(300 * time.Millisecond) // the won leave is out (held back)
	unlocking.Store(true)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("waiter's Unlock: %v", err)
	}
	time.Sleep(300 * time.Millisecond)
	flush(hfds) // H's release lands on node 2: it grants W's ticket
	time.Sleep(100 * time.Millisecond)
	t.Logf("node %d after H's release: lock %q", last, e.admin(t, last).Get(ctx, lockKey(n)).Val())
	flush(wfds)                               // W's leave lands
	e.gone(t, ctx, 3*time.Second, lockKey(n)) // a phantom hold lasts 30s
}
