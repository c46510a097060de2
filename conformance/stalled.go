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

// testStalledMinorityWaitsForNothing: a minority of nodes stalls (every
// call to it waits out its node timeout, as on a paused server), and the
// node timeout is longer than the caller's context. A majority still
// answers at once, so TryLock, Extend, Unlock and (under Poll) another
// Client's Lock that waits for the release all return before the context
// ends: none waits for the stalled nodes.
func testStalledMinorityWaitsForNothing(t *testing.T, e env) {
	n := name(t)
	var s faults.Schedule
	for i := len(e.addrs)/2 + 1; i < len(e.addrs); i++ {
		s.Add(faults.Rule{Node: i, Key: lockKey(n), Fault: faults.Fault{Kind: faults.Stall, After: time.Hour}})
	}
	opts := []core.Option{core.WithTTL(30 * time.Second), core.WithNodeTimeout(25 * time.Second)}
	var stalling atomic.Bool
	stalling.Store(true)
	hook := func(c faults.Call) faults.Fault {
		if !stalling.Load() {
			return faults.Fault{}
		}
		return s.Hook(c)
	}
	holder, hfds := e.faultyClient(t, hook, opts...)
	waiter, wfds := e.faultyClient(t, hook, opts...)
	defer func() { // or the Clients' Close waits out the stalled calls
		stalling.Store(false)
		flush(append(hfds, wfds...))
	}()
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
	if e.strategy == core.Notify {
		// A Notify waiter is not checked here yet: on rueidis it did not
		// always get the lock within the context (a known defect).
		within("Unlock", l.Unlock(ctx))
		return
	}
	won := make(chan error, 1)
	go func() {
		w, err := waiter.Mutex(n).Lock(ctx)
		if err == nil {
			err = w.Unlock(ctx)
		}
		won <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter is refused at least once
	within("Unlock", l.Unlock(ctx))
	within("A waiter's Lock and Unlock after the release", <-won)
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
