package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreTTLByID reads a lease's remaining time by its permit ID,
// from another Client, until the permits are released.
func testSemaphoreTTLByID(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	const ttl = 10 * time.Second
	l, err := e.client(t).Semaphore(n, 2, core.WithTTL(ttl)).TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	other := e.client(t).Semaphore(n, 2)
	if left, err := other.TTL(ctx, l.ID()); err != nil || left <= ttl-2*time.Second || left > ttl {
		t.Fatalf("TTL by permit ID of a lease of %v: got (%v, %v), want about %v", ttl, left, err, ttl)
	}
	if err := other.Extend(ctx, l.ID(), time.Minute); err != nil {
		t.Fatal(err)
	}
	if left, err := other.TTL(ctx, l.ID()); err != nil || left <= ttl {
		t.Fatalf("TTL by permit ID after Extend(1m): got (%v, %v), want above %v", left, err, ttl)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if left, err := other.TTL(ctx, l.ID()); !errors.Is(err, core.ErrNotHeld) || left != 0 {
		t.Fatalf("TTL by permit ID of released permits: got (%v, %v), want ErrNotHeld", left, err)
	}
	if _, err := other.TTL(ctx, "2-not-a-permit-id"); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("TTL of a malformed permit ID: got %v, want ErrInvalid", err)
	}
}
