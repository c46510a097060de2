package conformance

import (
	"crypto/rand"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMutexResume resumes a lease from another Client by its ID: the
// resumed lease has the original's ID and fencing token (0 once the
// fencing counter is gone) and a validity within the TTL; its Extend
// reaches the servers, and its Unlock frees the name, which the original
// then finds lost. A lease whose value another
// holder replaced (forced free, then taken) is lost to its resumed Lease
// too, without harm to that holder, and its ID no longer resumes. An ID
// that never held returns ErrNotHeld; a malformed one, and any ID on a
// reentrant Mutex, ErrInvalid.
func testMutexResume(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = 10 * time.Second
	holder := e.client(t, core.WithTTL(ttl)).Mutex(n)
	other := e.client(t, core.WithTTL(ttl)).Mutex(n) // another process, which knows the ID

	l := mustLock(t, ctx, holder.TryLock)
	r, err := other.Resume(ctx, l.ID())
	if err != nil {
		t.Fatalf("Resume of a held lease: %v", err)
	}
	if r.ID() != l.ID() || r.Token() != l.Token() || r.Token() == 0 {
		t.Fatalf("resumed lease: ID %q, Token %d; want %q, %d", r.ID(), r.Token(), l.ID(), l.Token())
	}
	if left := time.Until(r.Until()); left <= 0 || left > ttl {
		t.Fatalf("resumed lease: Until in %v, want within (0, %v]", left, ttl)
	}
	if ok, err := r.Valid(ctx); !ok || err != nil {
		t.Fatalf("Valid of the resumed lease: %v, %v; want true, nil", ok, err)
	}
	if err := r.Extend(ctx, 3*ttl); err != nil {
		t.Fatalf("Extend of the resumed lease: %v", err)
	}
	if left, err := r.TTL(ctx); err != nil || left <= ttl {
		t.Fatalf("TTL after the resumed lease's Extend to %v: %v, %v; want above %v", 3*ttl, left, err, ttl)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the resumed lease: %v", err)
	}
	if err := l.Extend(ctx, ttl); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Extend of the original after the resumed lease's Unlock: %v, want ErrLost", err)
	}
	if _, err := other.Resume(ctx, l.ID()); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Resume of a released lease: %v, want ErrNotHeld", err)
	}
	mustLock(t, ctx, holder.TryLock).Unlock(ctx) // free

	// With the fencing counter gone (it expires WithIdleExpiry after its
	// last draw, also while the name is held), the token is unknown.
	l = mustLock(t, ctx, holder.TryLock)
	for i := range e.addrs {
		if err := e.admin(t, i).Del(ctx, fenceKey(n)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if r, err = other.Resume(ctx, l.ID()); err != nil || r.Token() != 0 {
		t.Fatalf("Resume with the fencing counter gone: Token %d, %v; want 0, nil", r.Token(), err)
	}

	// Another holder replaces the value.
	if err := holder.ForceUnlock(ctx); err != nil {
		t.Fatal(err)
	}
	taker := mustLock(t, ctx, holder.TryLock)
	if ok, err := r.Valid(ctx); ok || err != nil {
		t.Fatalf("Valid of a resumed lease whose value another holder replaced: %v, %v; want false, nil", ok, err)
	}
	if err := r.Extend(ctx, ttl); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Extend of a resumed lease whose value another holder replaced: %v, want ErrLost", err)
	}
	if err := r.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock of a resumed lease whose value another holder replaced: %v, want ErrLost", err)
	}
	if _, err := other.Resume(ctx, l.ID()); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Resume of a value another holder replaced: %v, want ErrNotHeld", err)
	}
	if ok, err := taker.Valid(ctx); !ok || err != nil {
		t.Fatalf("Valid of the holder that replaced the value, after the resumed lease's calls: %v, %v; want true, nil", ok, err)
	}
	if _, err := other.Resume(ctx, rand.Text()); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Resume of an ID that never held: %v, want ErrNotHeld", err)
	}

	for _, id := range []string{"", "reserved:" + taker.ID(), taker.ID() + "x", taker.ID()[:25]} {
		if _, err := other.Resume(ctx, id); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Resume(%q): %v, want ErrInvalid", id, err)
		}
	}
	if _, err := e.client(t).Mutex(name(t), core.WithOwner("worker-1")).Resume(ctx, taker.ID()); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Resume on a reentrant Mutex: %v, want ErrInvalid", err)
	}
	if err := taker.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testMutexResumeWaiter resumes the lease a queued waiter won by a
// hand-off, whose ID is its line's token (Notify): with its fencing token.
func testMutexResumeWaiter(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	c := e.client(t, core.WithTTL(10*time.Second))
	l := mustLock(t, ctx, c.Mutex(n).TryLock)
	won := make(chan *core.Lease, 1)
	go func() {
		w, err := c.Mutex(n).Lock(ctx)
		if err != nil {
			t.Errorf("the waiter's Lock: %v", err)
		}
		won <- w
	}()
	e.awaitMutexWaiter(t, ctx, n)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-won
	if w == nil {
		t.FailNow()
	}
	r, err := e.client(t).Mutex(n).Resume(ctx, w.ID())
	if err != nil || r.Token() != w.Token() {
		t.Fatalf("Resume of the waiter's lease %q: Token %d, %v; want %d, nil", w.ID(), r.Token(), err, w.Token())
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the waiter's resumed lease: %v", err)
	}
}
