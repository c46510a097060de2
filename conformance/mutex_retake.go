package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMutexRetake extends a held lease with ExtendOrRetake (it returns the
// lease itself), and retakes lost ones while their name is free: one that
// expired, one whose keys were deleted on a majority (the retake releases
// them on the others). A retake returns a new lease with a new ID and a
// higher token, which holds the name, and the old lease stays lost. A
// lease whose name another holder took gets ErrLost and leaves that holder
// alone; one unlocked, ErrNotHeld, and the name stays free; a reentrant
// lock's lease, ErrInvalid.
func testMutexRetake(t *testing.T, e env) {
	ctx := ctxFor(t, 20*time.Second)
	const ttl = 10 * time.Second
	c := e.client(t, core.WithTTL(ttl))
	retaken := func(l *core.Lease, n, what string) *core.Lease {
		t.Helper()
		next, err := l.ExtendOrRetake(ctx, ttl)
		if err != nil {
			t.Fatalf("ExtendOrRetake of a lease that %s: %v", what, err)
		}
		if next == l || next.ID() == l.ID() || next.Token() <= l.Token() {
			t.Fatalf("ExtendOrRetake of a lease that %s: the same lease, or ID %q and Token %d against %q and %d; want a new lease, a new ID and a higher token",
				what, next.ID(), next.Token(), l.ID(), l.Token())
		}
		if err := l.Err(); !errors.Is(err, core.ErrLost) {
			t.Fatalf("Err of a lease that %s, once retaken: %v, want ErrLost", what, err)
		}
		if s, err := c.Mutex(n).State(ctx); err != nil || s.Holder != next.ID() {
			t.Fatalf("State after the retake of a lease that %s: holder %q, %v; want %q", what, s.Holder, err, next.ID())
		}
		return next
	}

	n := name(t)
	l := mustLock(t, ctx, c.Mutex(n, core.WithTTL(300*time.Millisecond)).TryLock)
	if next, err := l.ExtendOrRetake(ctx, 300*time.Millisecond); next != l || err != nil {
		t.Fatalf("ExtendOrRetake of a held lease: %p, %v; want the lease itself (%p), nil", next, err, l)
	}
	<-l.Done() // its validity ran out
	next := retaken(l, n, "expired")
	if again, err := next.ExtendOrRetake(ctx, ttl); again != next || err != nil {
		t.Fatalf("ExtendOrRetake of the retaken lease: %p, %v; want the lease itself (%p), nil", again, err, next)
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Deleted on a majority, its keys left on the others are released.
	n = name(t)
	l = mustLock(t, ctx, c.Mutex(n).TryLock)
	for i := range len(e.addrs)/2 + 1 {
		if err := e.admin(t, i).Del(ctx, lockKey(n)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	next = retaken(l, n, "was deleted on a majority")
	s, err := c.Mutex(n).State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range s.PerNode {
		if v.Holder == l.ID() {
			t.Fatalf("after the retake, node %d still holds the lost lease", i)
		}
	}
	if err := next.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// Another holder has the name: forced free, then taken.
	n = name(t)
	l = mustLock(t, ctx, c.Mutex(n).TryLock)
	if err := c.Mutex(n).ForceUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	taker := mustLock(t, ctx, e.client(t, core.WithTTL(ttl)).Mutex(n).TryLock)
	if next, err := l.ExtendOrRetake(ctx, ttl); next != nil || !errors.Is(err, core.ErrLost) {
		t.Fatalf("ExtendOrRetake while another holds the name: %v, %v; want nil, ErrLost", next, err)
	}
	if ok, err := taker.Valid(ctx); !ok || err != nil {
		t.Fatalf("Valid of the holder, after another lease's ExtendOrRetake: %v, %v; want true, nil", ok, err)
	}
	if err := taker.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	n = name(t)
	l = mustLock(t, ctx, c.Mutex(n).TryLock)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if next, err := l.ExtendOrRetake(ctx, ttl); next != nil || !errors.Is(err, core.ErrNotHeld) || errors.Is(err, core.ErrLost) {
		t.Fatalf("ExtendOrRetake after Unlock: %v, %v; want nil, ErrNotHeld", next, err)
	}
	if s, err := c.Mutex(n).State(ctx); err != nil || s.Holder != "" {
		t.Fatalf("State after an ExtendOrRetake of an unlocked lease: holder %q, %v; want free", s.Holder, err)
	}

	owned := mustLock(t, ctx, c.Mutex(name(t), core.WithOwner("worker-1")).TryLock)
	defer owned.Unlock(context.Background())
	if next, err := owned.ExtendOrRetake(ctx, ttl); next != nil || !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("ExtendOrRetake of a reentrant lock's lease: %v, %v; want nil, ErrInvalid", next, err)
	}
}
