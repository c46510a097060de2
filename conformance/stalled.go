package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testStalledMinorityWaitsForNothing: a minority of nodes stalls (every
// call to it waits out its node timeout, as on a paused server), and the
// node timeout is longer than the caller's context. A majority still
// answers at once, so TryLock, Extend and another Client's Lock that waits
// for the release all return before the context ends: none waits for the
// stalled nodes. Unlock waits for them until its own context ends, and
// then succeeds.
func testStalledMinorityWaitsForNothing(t *testing.T, e env) {
	n := name(t)
	holder, waiter := e.stalledClients(t, n)
	ctx, cancel := context.WithTimeout(ctxFor(t, 60*time.Second), 10*time.Second)
	defer cancel()
	within := func(what string, err error) {
		t.Helper()
		switch {
		case ctx.Err() != nil:
			t.Fatalf("%s with a stalled minority outlasted its 10s context (the node timeout is 25s): %v", what, err)
		case err != nil:
			t.Fatalf("%s with a stalled minority: %v", what, err)
		}
	}
	l, err := holder.Mutex(n).TryLock(ctx)
	within("TryLock", err)
	within("Extend", l.Extend(ctx, 30*time.Second))
	unlock := func(l *core.Lease) error {
		uctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		return l.Unlock(uctx)
	}
	won := make(chan error, 1)
	go func() {
		w, err := waiter.Mutex(n).Lock(ctx)
		if err == nil {
			err = unlock(w)
		}
		won <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter is refused at least once
	within("Unlock (its context ends after 200ms)", unlock(l))
	within("A waiter's Lock, and Unlock after 200ms, after the release", <-won)
}

// stalledOptions give a node timeout longer than the stalled cases'
// 10s contexts: only a call that does not wait for the stalled nodes
// returns in time.
var stalledOptions = []core.Option{core.WithTTL(30 * time.Second), core.WithNodeTimeout(25 * time.Second)}

// stalledMinority is a hook that stalls every call that touches key on
// the last minority of the cell's nodes, and resume, which ends the stall
// for good and lets the calls stalled so far go on: the stalled calls of a
// case's Clients must end before the Clients close, and a failed attempt's
// undo, sent once its stalled request returns, must not stall in turn.
func stalledMinority(e env, key string) (hook faults.Hook, resume func([]*faults.Driver)) {
	var s faults.Schedule
	for i := len(e.addrs)/2 + 1; i < len(e.addrs); i++ {
		s.Add(faults.Rule{Node: i, Key: key, Fault: faults.Fault{Kind: faults.Stall, After: time.Hour}})
	}
	return untilResumed(s.Hook)
}

// untilResumed is hook until resume, which ends its faults for good and
// lets the calls held so far go on.
func untilResumed(hook faults.Hook) (faults.Hook, func([]*faults.Driver)) {
	var resumed atomic.Bool
	return func(c faults.Call) faults.Fault {
			if resumed.Load() {
				return faults.Fault{}
			}
			return hook(c)
		}, func(fds []*faults.Driver) {
			resumed.Store(true)
			flush(fds)
		}
}

// stalledClients are two Clients, a holder and a waiter, whose calls on
// name stall on the last minority of nodes (stalledMinority) until the
// case ends, before the Clients close.
func (e env) stalledClients(t *testing.T, name string) (holder, waiter *core.Client) {
	hook, resume := stalledMinority(e, lockKey(name))
	holder, hfds := e.faultyClient(t, hook, stalledOptions...)
	waiter, wfds := e.faultyClient(t, hook, stalledOptions...)
	t.Cleanup(func() { resume(append(hfds, wfds...)) }) // runs before the Clients' Close
	return holder, waiter
}

// testUnlockUnconfirmedNotLost: a lease holds on a bare majority (the
// others dropped its acquisition), and its release fails on all of that
// majority but one node. The lease is not known to be lost: Unlock says
// ErrNoQuorum (its keys expire at their TTL), not ErrLost.
func testUnlockUnconfirmedNotLost(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	var s faults.Schedule
	cl, fds := e.faultyClient(t, s.Hook)
	defer flush(fds)
	quorum := len(e.addrs)/2 + 1
	for i := quorum; i < len(e.addrs); i++ {
		s.Add(faults.Rule{Node: i, Op: "MutexAcquire", Key: lockKey(n), Nth: 1, Fault: faults.Fault{Kind: faults.Drop}})
	}
	l, err := cl.Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock on a bare majority: %v", err)
	}
	for i := range quorum - 1 {
		s.Add(faults.Rule{Node: i, Key: lockKey(n), Nth: 1, Fault: later})
	}
	if err := l.Unlock(ctx); !errors.Is(err, core.ErrNoQuorum) || errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock that reached one node of the %d that hold the lease: got %v, want ErrNoQuorum", quorum, err)
	}
}

// testStalledRounds: a minority of nodes stalls on primitive p's key
// (every call waits out its node timeout of 8s, longer than the case's
// contexts). Rounds that the answering nodes decide return at once: an attempt a majority grants holds, and one whose answers split
// (node 0 held by another client, the rest free) fails with
// ErrNotAcquired and is undone where it was granted, without waiting for
// the stalled nodes to break the tie. A waiter's Lock that gives up
// returns by its context, and one that is served after the release
// holds.
func testStalledRounds(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		n, quorum := name(t), len(e.addrs)/2+1
		hook, resume := stalledMinority(e, x.key(n))
		// A node timeout shorter than stalledOptions', as a split round
		// waits a tenth of it.
		cl, fds := e.faultyClient(t, hook, core.WithTTL(30*time.Second), core.WithNodeTimeout(8*time.Second))
		defer resume(fds)
		ctx := ctxFor(t, 60*time.Second)
		stalled := fmt.Sprintf("with nodes %d to %d stalled (node timeout 8s)", quorum, len(e.addrs)-1)
		// bounded runs call with a context of d, and fails the case when
		// call took longer than slow: it waited for a stalled node.
		bounded := func(what string, d, slow time.Duration, call func(context.Context) error) error {
			t.Helper()
			cctx, ccancel := context.WithTimeout(ctx, d)
			defer ccancel()
			start := time.Now()
			err := call(cctx)
			if took := time.Since(start); took > slow {
				t.Errorf("%s %s took %v with a %v context", what, stalled, took.Round(time.Millisecond), d)
			}
			return err
		}
		held := func(what string, lock func(context.Context, *core.Client, string) (*core.Lease, error)) {
			t.Helper()
			var l *core.Lease
			err := bounded(what, 10*time.Second, 5*time.Second, func(ctx context.Context) (err error) { l, err = lock(ctx, cl, n); return err })
			if err != nil {
				t.Fatalf("%s %s: %v", what, stalled, err)
			}
			// Once its context ended, Unlock waits for the stalled nodes
			// about as long as the majority took, not as long again as
			// the context.
			if err := bounded("Unlock", 500*time.Millisecond, 2*time.Second, l.Unlock); err != nil {
				t.Fatalf("Unlock %s, its context ending after 500ms: %v", stalled, err)
			}
		}
		held("TryLock", x.try)

		other, err := x.try(ctx, e.clientOn(t, e.addrs[:1]), n)
		if err != nil {
			t.Fatalf("another client's lease on node 0 alone: %v", err)
		}
		// A split round gives the stalled nodes a tenth of the node
		// timeout (0.8s a name here) to break the tie.
		err = bounded("A split TryLock", 10*time.Second, 5*time.Second, func(ctx context.Context) error { _, err := x.try(ctx, cl, n); return err })
		if !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("TryLock granted by %d nodes, refused by node 0, %s: got %v, want ErrNotAcquired", quorum-1, stalled, err)
		}
		for i := 1; i < quorum; i++ {
			if v, err := e.admin(t, i).Exists(ctx, x.key(n)).Result(); err != nil || v != 0 {
				t.Errorf("node %d: the split attempt was not undone (%s exists %d, %v)", i, x.key(n), v, err)
			}
		}
		err = bounded("A waiter's Lock", 500*time.Millisecond, 2*time.Second, func(ctx context.Context) error { _, err := x.lock(ctx, cl, n); return err })
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a waiter's Lock on a lock held on node 0 %s: got %v, want context.DeadlineExceeded", stalled, err)
		}
		if err := other.Unlock(ctx); err != nil {
			t.Fatalf("the other client's Unlock: %v", err)
		}
		held("Lock after the release", x.lock)
	}
}

// testStalledUndoBounded: another client holds the lock on a bare
// majority, whose answers come 100ms late; the other nodes grant first,
// and the undo of the failed attempt stalls on them. A TryLock with a 2s
// context waits for that undo until the context ends, and then returns
// ErrNotAcquired (the round was refused; its undo does not make that the
// context's doing) without waiting longer.
func testStalledUndoBounded(t *testing.T, e env) {
	n, quorum := name(t), len(e.addrs)/2+1
	var s faults.Schedule
	late := faults.Fault{Kind: faults.Slow, After: 100 * time.Millisecond}
	stall := faults.Fault{Kind: faults.Stall, After: time.Hour}
	for i := range len(e.addrs) {
		if i < quorum {
			s.Add(faults.Rule{Node: i, Op: "MutexAcquire", Key: lockKey(n), Fault: late})
			continue
		}
		for _, op := range mutexUndo {
			s.Add(faults.Rule{Node: i, Op: op, Key: lockKey(n), Fault: stall})
		}
	}
	// The undo, sent again in the background once the call is over, must
	// not stall after the case: the Client's Close would wait its node
	// timeout.
	hook, resume := untilResumed(s.Hook)
	cl, fds := e.faultyClient(t, hook, stalledOptions...)
	defer resume(fds)
	ctx := ctxFor(t, 60*time.Second)
	other, err := e.clientOn(t, e.addrs[:quorum]).Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("another client's lease on nodes 0 to %d: %v", quorum-1, err)
	}
	defer other.Unlock(ctx)
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = cl.Mutex(n).TryLock(tctx)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a refused TryLock with a 2s context, whose undo stalls on nodes %d to %d (node timeout 25s), took %v",
			quorum, len(e.addrs)-1, took.Round(time.Millisecond))
	}
	if !errors.Is(err, core.ErrNotAcquired) {
		t.Errorf("a TryLock refused by a majority, whose undo outlasted its context: got %v, want ErrNotAcquired", err)
	}
}

// testStalledContextBounds: a minority of nodes stalls, with a node
// timeout longer than every context. Calls that the answering nodes cannot
// decide alone still return by their context: a waiter's Lock that gives
// up (it leaves the line on the nodes that answer), and an Unlock whose
// answers split (one node of the lease's majority lost the key), which
// reports ErrNoQuorum.
func testStalledContextBounds(t *testing.T, e env) {
	n, quorum := name(t), len(e.addrs)/2+1
	holder, waiter := e.stalledClients(t, n)
	ctx, cancel := context.WithTimeout(ctxFor(t, 60*time.Second), 20*time.Second)
	defer cancel()
	l, err := holder.Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with a stalled minority: %v", err)
	}
	bounded := func(what string, d time.Duration, call func(context.Context) error) error {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, d)
		defer ccancel()
		start := time.Now()
		err := call(cctx)
		if took := time.Since(start); took > d+2*time.Second {
			t.Errorf("%s took %v with a %v context (the node timeout is 25s)", what, took.Round(time.Millisecond), d)
		}
		return err
	}
	err = bounded("A waiter's Lock", 500*time.Millisecond, func(ctx context.Context) error {
		_, err := waiter.Mutex(n).Lock(ctx)
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a waiter's Lock on a held lock: got %v, want context.DeadlineExceeded", err)
	}
	if err := e.admin(t, quorum-1).Del(ctx, lockKey(n)).Err(); err != nil {
		t.Fatal(err)
	}
	if err := bounded("An Unlock split between release and refusal", 200*time.Millisecond, l.Unlock); !errors.Is(err, core.ErrNoQuorum) {
		t.Errorf("Unlock released on %d nodes, refused on 1, %d stalled: got %v, want ErrNoQuorum", quorum-1, len(e.addrs)-quorum, err)
	}
}

// testLateGrantAfterUnlock: the acquisition of a lease lands on the last
// node only after the lease was released (held back until flush, within
// the node timeout, as on a server paused for a moment; the attempt won
// without it). The grant it makes there belongs to a lease that has
// ended, and must be undone when its answer comes, not hold the node
// until its TTL. (One that lands after its node timeout, unanswered, can
// only expire.)
func testLateGrantAfterUnlock(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	last := len(e.addrs) - 1
	var s faults.Schedule
	s.Add(faults.Rule{Node: last, Op: "MutexAcquire", Key: lockKey(n), Nth: 1, Fault: faults.Fault{Kind: faults.Slow, After: time.Hour}})
	cl, fds := e.faultyClient(t, s.Hook, core.WithTTL(time.Minute), core.WithNodeTimeout(5*time.Second))
	defer flush(fds)
	l, err := cl.Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with the last node's acquisition held back: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	flush(fds) // the acquisition lands on the last node, and grants
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		v, err := e.admin(t, last).Exists(ctx, lockKey(n)).Result()
		if err == nil && v == 0 {
			return
		}
		if time.Now().After(deadline) {
			ttl := e.admin(t, last).PTTL(ctx, lockKey(n)).Val()
			t.Fatalf("node %d: the grant that landed after Unlock still holds the lock (for %v more)", last, ttl.Round(time.Second))
		}
	}
}
