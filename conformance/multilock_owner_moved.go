package conformance

import (
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMultiOwnerMovesOnPassesOn: an owner's MultiLock waiter over two names
// waits in the line of the second, with a plain Mutex waiter of that name
// behind it. Meanwhile a third party takes the first name. The holder's
// release reserves the second name for the MultiLock waiter and wakes it;
// its attempt stops at the first name and it moves to that line. Moving,
// it must pass the reservation on: the Mutex waiter behind it holds within
// wokenWithin of the release, not at its retry, the holder's TTL (30s).
// Then the first name's holder lets go, and the MultiLock waiter holds
// both names once the Mutex waiter lets go of the second.
func testMultiOwnerMovesOnPassesOn(t *testing.T, e env) {
	ctx := ctxFor(t, 90*time.Second)
	names := e.multiNames(t, ctx, 2)
	const ttl = 30 * time.Second
	held := mustLock(t, ctx, e.client(t, unhurried).Mutex(names[1], core.WithOwner("holder"), core.WithTTL(ttl)).Lock)
	c := e.client(t, unhurried, core.WithTTL(ttl))
	gotMulti := e.inLine(t, ctx, queueKey(names[1]), 1, c.MultiLock(names, core.WithOwner("multi")).Lock)
	gotMutex := e.inLine(t, ctx, queueKey(names[1]), 2, e.client(t, unhurried, core.WithTTL(ttl)).Mutex(names[1]).Lock)
	first := mustLock(t, ctx, e.client(t, unhurried).Mutex(names[0], core.WithTTL(ttl)).TryLock)
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var second *core.Lease
	select {
	case r := <-gotMutex:
		if r.err != nil {
			t.Fatalf("the Mutex waiter: %v", r.err)
		}
		second = r.l
		t.Logf("the Mutex waiter held %v after the release", r.at.Sub(released).Round(time.Millisecond))
		if d := r.at.Sub(released); d > wokenWithin {
			t.Errorf("the Mutex waiter held %v after the release, want within %v: the reservation was not passed on when the MultiLock waiter moved to the first name's line", d.Round(time.Millisecond), wokenWithin)
		}
	case r := <-gotMulti:
		t.Fatalf("the MultiLock waiter returned (%v) while its first name is held", r.err)
	case <-time.After(ttl + 5*time.Second):
		t.Fatal("the Mutex waiter did not hold the released name within the holder's TTL and 5s")
	}
	select {
	case r := <-gotMulti:
		t.Fatalf("the MultiLock waiter returned (%v) while its names are held", r.err)
	default:
	}
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	unlocked := time.Now()
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-gotMulti:
		if r.err != nil {
			t.Fatalf("the MultiLock waiter: %v", r.err)
		}
		t.Logf("the MultiLock waiter held %v after the last release", r.at.Sub(unlocked).Round(time.Millisecond))
		e.namesRefused(t, ctx, names, "while the MultiLock waiter holds them")
		r.l.Unlock(ctx)
	case <-time.After(ttl + 5*time.Second):
		t.Fatal("the MultiLock waiter did not hold both names once they were free")
	}
}
