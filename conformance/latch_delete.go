package conformance

import (
	"testing"
	"time"
)

// testLatchDelete deletes a latch of 3 while four waiters in two Clients
// wait on it, before any CountDown: a deleted latch is open, so all of
// them return within wokenWithin (under Notify, its deletion's event wakes
// them, long before their TTL recheck), its key is gone from every node
// and Count is 0. Deleting it again succeeds too, and TrySetCount sets it
// anew, which counts down as a new latch.
func testLatchDelete(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	const clients, perClient = 2, 2
	if ok, err := e.latchClient(t).Latch(n).TrySetCount(ctx, 3); err != nil || !ok {
		t.Fatalf("TrySetCount(3) on a new latch: got (%v, %v), want true", ok, err)
	}
	got := make(chan error, clients*perClient)
	for range clients {
		l := e.latchClient(t).Latch(n)
		for range perClient {
			go func() { got <- l.Wait(ctx) }()
		}
	}
	e.awaitWatching(t, ctx, latchKey(n))
	time.Sleep(100 * time.Millisecond) // all of them wait
	select {
	case err := <-got:
		t.Fatalf("Wait returned (%v) on a latch of 3 before any CountDown or Delete", err)
	default:
	}

	l := e.latchClient(t).Latch(n)
	if err := l.Delete(ctx); err != nil {
		t.Fatalf("Delete of a set latch: %v", err)
	}
	bound := time.After(wokenWithin)
	for range clients * perClient {
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("Wait on a deleted latch: %v", err)
			}
		case <-bound:
			t.Fatalf("a waiter still waited %v after Delete: not every waiter was woken", wokenWithin)
		}
	}
	if k := e.onNodes(t, ctx, latchKey(n)); k != 0 {
		t.Fatalf("the deleted latch's key is on %d nodes, want none", k)
	}
	if c, err := l.Count(ctx); err != nil || c != 0 {
		t.Fatalf("Count after Delete: got (%d, %v), want 0", c, err)
	}
	if err := l.Delete(ctx); err != nil {
		t.Fatalf("Delete of a latch with no count: %v, want nil", err)
	}

	if ok, err := l.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount(2) on the deleted latch: got (%v, %v), want true", ok, err)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := l.Count(ctx); err != nil || c != 1 {
		t.Fatalf("Count after TrySetCount(2) and a CountDown: got (%d, %v), want 1", c, err)
	}
}
