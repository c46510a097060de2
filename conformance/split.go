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

// testSplitGrantsYieldToEarlier: on three nodes with node 1 held for good
// by someone else, A queues first and B second, but A's joins of node 2's
// line are held back until the release, so the holder's release grants node 0 to A
// and node 2 to B. Neither has a majority: each attempts, is refused at
// the other's node, and undoes its own grant, each undo slowed so that
// both attempts are refused first. Undone by handing them on, the grants
// would go to each other, attempt after attempt. The later waiter must
// yield instead: A must hold the lock first, and B right after A's
// release, both within 10s: half their TTL of 20s, which waiting each
// other out would take, and room for A's joins, each held back 1.5s, on a
// loaded machine. In the second variant A's
// joins of node 2's line stay held back for 500ms more, so that B, which
// does not see A ahead of it there, keeps node 2 as A keeps node 0: each
// must try again soon, not at the other's TTL, or they wait each other out.
func testSplitGrantsYieldToEarlier(t *testing.T, e env) {
	for _, after := range []time.Duration{0, 500 * time.Millisecond} {
		t.Run("heldBack+"+after.String(), func(t *testing.T) { splitGrantsYieldToEarlier(t, e, after) })
	}
}

func splitGrantsYieldToEarlier(t *testing.T, e env, after time.Duration) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	const ttl = 20 * time.Second
	var released atomic.Bool
	var heldUntil atomic.Int64 // A's joins of node 2 are held back until then (unix ns); 0 until the release
	waiter := func(heldBack bool) *core.Client {
		c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
			switch {
			case heldBack && call.Node == 2 && call.Op == "MutexAcquire" && (!released.Load() || time.Now().UnixNano() < heldUntil.Load()):
				return faults.Fault{Kind: faults.Delay, After: 1500 * time.Millisecond}
			case released.Load() && call.Op == "ReleaseWake":
				return faults.Fault{Kind: faults.Slow, After: 100 * time.Millisecond}
			}
			return faults.Fault{}
		}, core.WithTTL(ttl), core.WithNodeTimeout(time.Second))
		return c
	}
	a, b := waiter(true), waiter(false)
	if err := e.admin(t, 1).Set(ctx, lockKey(n), "someone-else", 30*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	h, err := e.client(t, core.WithTTL(ttl), core.WithNodeTimeout(3*time.Second)).Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("the holder's Lock: %v", err)
	}
	order := make(chan string, 2)
	lock := func(who string, c *core.Client) <-chan locked {
		done := make(chan locked, 1)
		go func() {
			l, err := c.Mutex(n).Lock(ctx)
			if err == nil {
				order <- who
				uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				l.Unlock(uctx)
			}
			done <- locked{l, err, time.Now()}
		}()
		return done
	}
	doneA := lock("A", a)
	awaitQueued(t, ctx, e, 0, queueKey(n), doneA)
	time.Sleep(50 * time.Millisecond) // A's place in line is older than B's
	doneB := lock("B", b)
	for i := 0; e.admin(t, 2).ZCard(ctx, queueKey(n)).Val() == 0; i++ {
		if i == 200 {
			t.Fatal("B never queued at node 2")
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	heldUntil.Store(start.Add(after).UnixNano())
	released.Store(true)
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock: %v", err)
	}
	for _, done := range []<-chan locked{doneA, doneB} {
		select {
		case r := <-done:
			if r.err != nil {
				t.Fatalf("a waiter's Lock: %v", r.err)
			}
		case <-time.After(ttl/2 - time.Since(start)):
			t.Fatalf("the waiters do not both hold the lock in turn %v after the holder's release (TTL %v): they hand their halves of a split majority to each other, or wait each other out", ttl/2, ttl)
		}
	}
	if first := <-order; first != "A" {
		t.Errorf("%s held the lock first; A, ahead in line, should have", first)
	}
}

// heldOnNodesOneAndTwo has someone else hold the lock n on nodes 1 and 2
// for 30s, behind the library's back.
func (e env) heldOnNodesOneAndTwo(t *testing.T, ctx context.Context, n string) {
	t.Helper()
	for i := 1; i <= 2; i++ {
		if err := e.admin(t, i).Set(ctx, lockKey(n), "someone-else", 30*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// testOwnerWaiterUndoes: an owner's (WithOwner) queued waiter whose attempt
// took node 0 but was refused at nodes 1 and 2 must undo its hold on
// node 0. Once it gives up and node 1 is free, another owner must get the
// lock at once (nodes 0 and 1), not after the waiter's TTL.
func testOwnerWaiterUndoes(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	e.heldOnNodesOneAndTwo(t, ctx, n)
	w := e.client(t, core.WithTTL(10*time.Second)).Mutex(n, core.WithOwner("waiter"))
	wctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
	defer cancel()
	if _, err := w.Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the waiter's Lock: got %v, want DeadlineExceeded", err)
	}
	time.Sleep(200 * time.Millisecond) // background leaves
	typ := e.admin(t, 0).Type(ctx, lockKey(n)).Val()
	pttl := e.admin(t, 0).PTTL(ctx, lockKey(n)).Val()
	if err := e.admin(t, 1).Del(ctx, lockKey(n)).Err(); err != nil {
		t.Fatal(err)
	}
	if l, err := e.client(t, core.WithTTL(10*time.Second)).Mutex(n, core.WithOwner("other")).TryLock(ctx); err == nil {
		l.Unlock(ctx)
	} else {
		t.Errorf("another owner's TryLock with nodes 0 and 1 free: %v; node 0 holds a %s key with pttl %v (%v)", err, typ, pttl,
			e.admin(t, 0).HGetAll(ctx, lockKey(n)).Val())
	}
}

// testPartialHolderNoPolling: a holder whose lease holds nodes 1 and 2
// only (its acquisition did not reach node 0) holds the lock for 3s. A
// Notify waiter should wait for the release's grants, not attempt every
// backoff: count its attempts. It takes the free node 0 at each attempt,
// which it must let go, not keep (and then try again soon) as it keeps a
// grant a release made it.
func testPartialHolderNoPolling(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	hc, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Node == 0 && call.Op == "MutexAcquire" {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(10*time.Second))
	h, err := hc.Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("the holder's Lock: %v", err)
	}
	var calls atomic.Int64
	wc, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		calls.Add(1)
		return faults.Fault{}
	}, core.WithTTL(10*time.Second))
	done := startLock(ctx, wc.Mutex(n).Lock)
	time.Sleep(3 * time.Second)
	before := calls.Load()
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	t.Logf("the waiter made %d script calls while the holder held the lock for 3s, %d in all", before, calls.Load())
	if before > 30 {
		t.Errorf("the waiter made %d script calls in 3s of waiting: it polls", before)
	}
}

// testClosedWaiterKeepsNothing: a waiter refused at nodes 1 and 2 (held by
// someone else) is closed while it waits. Once node 1 is free, another
// client must get the lock (nodes 0 and 1) at once.
func testClosedWaiterKeepsNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	e.heldOnNodesOneAndTwo(t, ctx, n)
	wc := e.client(t, core.WithTTL(10*time.Second))
	done := startLock(ctx, wc.Mutex(n).Lock)
	time.Sleep(time.Second)
	if err := wc.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; !errors.Is(r.err, core.ErrClosed) {
		t.Fatalf("the waiter's Lock: got %v, want ErrClosed", r.err)
	}
	v := e.admin(t, 0).Get(ctx, lockKey(n)).Val()
	pttl := e.admin(t, 0).PTTL(ctx, lockKey(n)).Val()
	if err := e.admin(t, 1).Del(ctx, lockKey(n)).Err(); err != nil {
		t.Fatal(err)
	}
	if l, err := e.client(t, core.WithTTL(10*time.Second)).Mutex(n).TryLock(ctx); err == nil {
		l.Unlock(ctx)
	} else {
		t.Errorf("TryLock with nodes 0 and 1 free after the waiter's Client closed: %v; node 0 holds %q for %v", err, v, pttl)
	}
}
