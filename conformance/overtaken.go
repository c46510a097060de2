package conformance

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testOvertakenJoinLandsLate: a waiter rotates its token at every attempt
// (nodes 1 to N−quorum drop its calls, so their undos fail), many times
// while its first joining attempt on the last node is held back. That
// attempt lands last there, with a token and a secret the waiter gave up
// long before: it must be refused, or its join would name the old token
// in the ticket, and the holder's release would grant the last node to a
// token that the waiter neither hears (the secret is too old) nor takes
// over, and nobody else can take until its TTL ends. The waiter needs the
// last node for a majority, so it must hold the lock soon after the
// holder's release, and every node must be free after its Unlock.
func testOvertakenJoinLandsLate(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) { overtakenJoinLandsLate(t, e, x) }
}

func overtakenJoinLandsLate(t *testing.T, e env, x exclusiveLock) {
	ctx, n := ctxFor(t, 40*time.Second), name(t)
	quorum, last := len(e.addrs)/2+1, len(e.addrs)-1
	const heldBack, ttl = 7 * time.Second, 10 * time.Second
	var mu sync.Mutex
	attempts := 0
	w, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
		switch {
		case call.Node >= 1 && call.Node <= len(e.addrs)-quorum && (call.Op != x.acquire || call.N != 2):
			// Not in the round of the held-back attempt, which would
			// then lack a majority of answers.
			return faults.Fault{Kind: faults.Drop}
		case call.Node == last && call.Op == x.acquire:
			mu.Lock()
			defer mu.Unlock()
			attempts = call.N
			if call.N == 2 { // the first attempt that joins the line
				return faults.Fault{Kind: faults.Delay, After: heldBack}
			}
		}
		return faults.Fault{}
	}, core.WithTTL(ttl))
	// The holder's TTL sets the waiter's pace: it tries again when the
	// holder's key would expire.
	hc := e.client(t, core.WithTTL(time.Second), core.WithAutoExtend(), core.WithNodeTimeout(500*time.Millisecond))
	holder, err := x.lock(ctx, hc, n)
	if err != nil {
		t.Fatalf("the holder's Lock: %v", err)
	}
	done := startTaking(ctx, x.lock, w, n)
	// Its later attempts come after the held-back one was sent; once none
	// is pending, it has landed.
	for {
		mu.Lock()
		a := attempts
		mu.Unlock()
		if a >= 3 && fds[last].Pending() == 0 {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the waiter's Lock returned (%v) while the holder held", r.err)
		case <-ctx.Done():
			t.Fatal("the held-back attempt never landed")
		case <-time.After(10 * time.Millisecond):
		}
	}
	mu.Lock()
	made := attempts
	mu.Unlock()
	if made < 8 {
		t.Fatalf("the waiter made %d attempts on the last node while one was held back for %v, want 8 or more: it rotated its token too few times for the case to prove anything", made, heldBack)
	}
	released := time.Now()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock: %v", err)
	}
	var r locked
	select {
	case r = <-done:
	case <-time.After(3 * time.Second):
		t.Fatalf("the waiter does not hold the lock 3s after the holder's release; the last node holds %q (an old token of the waiter's, granted by the release, holds it for the waiter's TTL of %v)",
			e.admin(t, last).Get(ctx, x.key(n)).Val(), ttl)
	}
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	t.Logf("the waiter held the lock %v after the holder's release, after %d attempts", time.Since(released).Round(time.Millisecond), made)
	uctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r.l.Unlock(uctx)
	e.gone(t, ctx, 10*time.Second, x.key(n))
}
