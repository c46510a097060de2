package conformance

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// withDown returns the cell's addresses with the last n behind proxies,
// and a function that takes those n down.
func (e env) withDown(t testing.TB, n int) (addrs []string, down func()) {
	addrs = append([]string(nil), e.addrs...)
	var downs []func()
	for i := len(addrs) - n; i < len(addrs); i++ {
		var d func()
		addrs[i], d = testenv.Proxy(t, addrs[i], 0)
		downs = append(downs, d)
	}
	return addrs, func() {
		for _, d := range downs {
			d()
		}
	}
}

// runQuorum runs the cases that need three or more nodes, some of them
// down or taken: a minority (N minus the quorum) may fail, one more may not.
func runQuorum(t *testing.T, e env) {
	minority := e.tolerated()
	t.Run("MinorityDown", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		addrs, down := e.withDown(t, minority)
		c := e.clientOn(t, addrs)
		down()
		l, err := c.Mutex(n).Lock(ctx)
		if err != nil {
			t.Fatalf("Lock with %d of %d nodes down: %v", minority, len(addrs), err)
		}
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend with %d of %d nodes down: %v", minority, len(addrs), err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock with %d of %d nodes down: %v", minority, len(addrs), err)
		}
	})
	t.Run("MajorityDown", func(t *testing.T) {
		e.majorityDown(t, func(n string) []string { return []string{lockKey(n)} }, mutexLock)
	})
	t.Run("ContextEndsSlowRound", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		addrs := append([]string(nil), e.addrs...)
		for i := range addrs {
			addrs[i], _ = testenv.Proxy(t, addrs[i], 250)
		}
		c := e.clientOn(t, addrs, core.WithNodeTimeout(2*time.Second))
		short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		_, err := c.Mutex(n).TryLock(short)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, core.ErrNoQuorum) {
			t.Fatalf("TryLock whose context ended while every node was slow: got %v, want only context.DeadlineExceeded", err)
		}
	})
	t.Run("MinorityFreeNoSpin", func(t *testing.T) { testMinorityFreeNoSpin(t, e) })
	t.Run("LateUndoSparesGrant", func(t *testing.T) { testLateUndoSparesGrant("Mutex")(t, e) })
	t.Run("FailedAttemptCleansUp", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		taken := minority + 1 // nodes 1..taken: a majority out of reach
		for i := 1; i <= taken; i++ {
			e.admin(t, i).Set(ctx, lockKey(n), "someone-else", 10*time.Second)
		}
		if _, err := e.client(t).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("TryLock held on %d of %d nodes: got %v, want ErrNotAcquired", taken, len(e.addrs), err)
		}
		// The undo of a node that answered after the others lands later.
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if n, _ := e.admin(t, 0).Exists(ctx, lockKey(n)).Result(); n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the failed attempt left its key on the node that granted it")
			}
		}
		for i := 1; i <= taken; i++ {
			if v, _ := e.admin(t, i).Get(ctx, lockKey(n)).Result(); v != "someone-else" {
				t.Fatalf("node %d: the failed attempt touched the holder's key (now %q)", i, v)
			}
		}
	})
	t.Run("DeletedOnMajority", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		l := mustLock(t, ctx, e.client(t, unhurried).Mutex(n).Lock)
		// Lock returns once a majority answered: the last node's take may
		// land after the deletes below, and hold the lock on a majority.
		for i := range e.addrs {
			if !eventually(2*time.Second, func() bool { return e.admin(t, i).Exists(ctx, lockKey(n)).Val() == 1 }) {
				t.Fatalf("node %d: the lock is not held there 2s after Lock returned", i)
			}
		}
		for i := range minority {
			e.admin(t, i).Del(ctx, lockKey(n))
		}
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend with the key deleted on %d of %d nodes: %v", minority, len(e.addrs), err)
		}
		e.admin(t, minority).Del(ctx, lockKey(n))
		if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, core.ErrLost) {
			t.Fatalf("Extend with the key deleted on %d of %d nodes: got %v, want ErrLost", minority+1, len(e.addrs), err)
		}
		select {
		case <-l.Done():
		default:
			t.Fatal("Done is open after the lease was found lost")
		}
		if err := l.Unlock(ctx); !errors.Is(err, core.ErrLost) {
			t.Fatalf("Unlock of a lost lease: got %v, want ErrLost", err)
		}
	})
}

// tolerated is how many of the cell's nodes may fail with a quorum left.
func (e env) tolerated() int { return len(e.addrs) - (len(e.addrs)/2 + 1) }

func mutexLock(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
	return c.Mutex(n).Lock
}

// minorityDown checks a primitive with a minority of nodes down: hold
// takes it on one Client, next waits for it on another, and both get it.
func (e env) minorityDown(t *testing.T, hold, next locker) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	addrs, down := e.withDown(t, e.tolerated())
	a, b := e.clientOn(t, addrs), e.clientOn(t, addrs)
	down()
	l, err := hold(a, n)(ctx)
	if err != nil {
		t.Fatalf("acquisition with a minority of nodes down: %v", err)
	}
	got := startLock(ctx, next(b, n))
	time.Sleep(100 * time.Millisecond)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with a minority of nodes down: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter's acquisition with a minority of nodes down: %v", r.err)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// majorityDown checks that with a majority of nodes down every one of
// locks waits it out (see waitsOut) and leaves none of the primitive's
// keys on the node that answered.
func (e env) majorityDown(t *testing.T, keys func(name string) []string, locks ...locker) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	addrs, down := e.withDown(t, e.tolerated()+1)
	c := e.clientOn(t, addrs)
	down()
	for i, lock := range locks {
		waitsOut(t, ctx, fmt.Sprintf("acquisition %d", i+1), func(ctx context.Context) error {
			_, err := lock(c, n)(ctx)
			return err
		})
	}
	// The undo of an attempt that the context's end cut short goes on in
	// the background.
	var k int64
	if !eventually(2*time.Second, func() bool { k, _ = e.admin(t, 0).Exists(ctx, keys(n)...).Result(); return k == 0 }) {
		t.Fatalf("the failed acquisitions left %d keys on the node that answered, 2s after", k)
	}
}

// waitsOut checks that a waiting call with a majority of nodes down waits
// until its context ends, then returns the context's error joined with
// ErrNoQuorum, which says why it did not acquire.
func waitsOut(t *testing.T, ctx context.Context, op string, call func(context.Context) error) {
	t.Helper()
	wait, cancel := cancelledAfter(ctx, 500*time.Millisecond)
	defer cancel()
	if err := call(wait); !errors.Is(err, context.Canceled) || !errors.Is(err, core.ErrNoQuorum) {
		t.Fatalf("%s with a majority down: got %v, want context.Canceled joined with ErrNoQuorum", op, err)
	}
}

// cancelledAfter is ctx, cancelled after d: a call that returns
// context.Canceled ended by it, not by a node timeout, whose error is a
// context.DeadlineExceeded.
func cancelledAfter(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	t := time.AfterFunc(d, cancel)
	return ctx, func() { t.Stop(); cancel() }
}

// namedCall is a call of a case, and what it is called in messages.
type namedCall struct {
	op   string
	call func() error
}

// failFastWithMajorityDown makes the calls in turn, each of which a
// majority of nodes down must fail with ErrNoQuorum, and all of them
// within 5s.
func failFastWithMajorityDown(t *testing.T, calls []namedCall) {
	t.Helper()
	start := time.Now()
	for _, c := range calls {
		if err := c.call(); !errors.Is(err, core.ErrNoQuorum) {
			t.Fatalf("%s with a majority down: got %v, want ErrNoQuorum", c.op, err)
		}
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("calls with a majority down took %v; they should fail fast", took)
	}
}

// testMinorityFreeNoSpin waits a second for a lock held on a majority and
// free on the rest. Each attempt wins the free nodes and undoes that: a
// waiter must not be woken by its own undo (a DEL there), but wait for
// the holders' release or expiry, as often as Poll's backoff would retry
// at most.
func testMinorityFreeNoSpin(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	for i := e.tolerated(); i < len(e.addrs); i++ {
		e.admin(t, i).Set(ctx, lockKey(n), "someone-else", 10*time.Second)
	}
	var attempts atomic.Int64
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Op == "MutexAcquire" && call.Node == 0 {
			attempts.Add(1)
		}
		return faults.Fault{}
	})
	wait, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := c.Mutex(n).Lock(wait); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock held on a majority: got %v, want context.DeadlineExceeded", err)
	}
	// Poll's default backoff (2ms doubling, capped at 250ms, full jitter)
	// retries 11 to 20 times in a second, and more than 20 in about one
	// run of 700; more than 30, in none of a million simulated. A waiter
	// that spins makes thousands.
	if got := attempts.Load(); got > 30 {
		t.Errorf("%d attempts in 1s on a lock held on a majority of nodes: the waiter spins", got)
	}
}
