package conformance

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testDoneWaiterTakesNothing: a waiter whose context ends while it waits
// returns the context's error, also when what frees the lock reaches it
// in the same moment: under Notify a grant (the context ends just before
// the release), under Poll an attempt in flight (it ends as each attempt
// sent after the release began is sent, which waits for the release to
// end). What it won goes on at once, and the next Lock takes the lock
// without waiting out a lease that no one holds. The waiter's context
// reports its end without closing Done, so that nothing but the release
// wakes the waiter. Under Poll an attempt sent just before the release may
// still win after it, with the context not ended: such a round proves
// nothing, and the case tries again, as after a holder that won without
// some node.
func testDoneWaiterTakesNothing(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		inTries(t, 5, "the holder missed a node or an attempt sent before the release won every time",
			func(int) bool { return doneWaiterRound(t, e, x) })
	}
}

// doneWaiterRound is one round of testDoneWaiterTakesNothing; it reports
// false when the waiter won with its context not ended.
func doneWaiterRound(t *testing.T, e env, x exclusiveLock) bool {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	c := e.client(t, core.WithTTL(10*time.Second))
	holder, err := x.lock(ctx, c, n)
	if err != nil {
		t.Fatalf("the holder's Lock: %v", err)
	}
	if on := e.onNodes(t, ctx, x.key(n)); on != len(e.addrs) {
		// It won without some node (its call there timed out), where the
		// waiter would take the name rather than wait in line.
		holder.Unlock(ctx)
		return false
	}
	waiterCtx := &endsQuietly{Context: ctx}
	var releasing atomic.Bool
	released := make(chan struct{})
	waiter, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if releasing.Load() && strings.Contains(call.Op, "Acquire") {
			<-released
			waiterCtx.end()
		}
		return faults.Fault{}
	}, core.WithTTL(10*time.Second))
	lock := func(ctx context.Context) (*core.Lease, error) { return x.lock(ctx, waiter, n) }
	var got <-chan locked
	if e.strategy == core.Notify {
		got = e.inLine(t, ctx, x.line(n), 1, func(context.Context) (*core.Lease, error) { return lock(waiterCtx) })
		waiterCtx.end()
	} else {
		got = startLock(waiterCtx, lock)
		time.Sleep(300 * time.Millisecond) // past the waiter's first attempts
	}
	releasing.Store(true)
	err = holder.Unlock(ctx)
	close(released)
	if err != nil {
		t.Fatalf("the holder's Unlock: %v", err)
	}
	select {
	case r := <-got:
		if r.err == nil {
			r.l.Unlock(ctx)
			if waiterCtx.Err() == nil {
				return false
			}
			t.Fatal("a waiter whose context had ended got the lock")
		}
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("the waiter whose context ended: got %v, want context.Canceled", r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter whose context ended did not return within 10s of the release")
	}
	if err := takenSoon(ctx, x.lock, c, n); err != nil {
		t.Fatalf("a Lock after the waiter gave up: %v (the lock is still held for it?)", err)
	}
	return true
}

// takenSoon takes the lock called name with take through c within 2s,
// and releases it.
func takenSoon(ctx context.Context, take taker, c *core.Client, name string) error {
	soon, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	l, err := take(soon, c, name)
	if err == nil {
		l.Unlock(ctx)
	}
	return err
}

// endsQuietly is a context whose Err reports context.Canceled once end is
// called, while Done stays open: a waiter checks it only when something
// else wakes it.
type endsQuietly struct {
	context.Context
	ended atomic.Bool
}

func (c *endsQuietly) end() { c.ended.Store(true) }

func (c *endsQuietly) Err() error {
	if c.ended.Load() {
		return context.Canceled
	}
	return c.Context.Err()
}
