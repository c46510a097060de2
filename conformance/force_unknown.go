package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testForceUnknownHolder force-releases, on a Semaphore one lease holds,
// a holder token that holds nothing there (a mistyped one): it says so
// with ErrNotHeld, writes no key on any node, and the lease holds on.
func testForceUnknownHolder(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) {
		return e.client(t, unhurried).Semaphore(n, 1).TryAcquire(ctx, 1)
	})
	before := make([][]string, len(e.addrs))
	for i := range e.addrs {
		before[i] = e.keysUnder(t, ctx, i, lockKey(n))
		slices.Sort(before[i])
	}
	err := e.client(t, unhurried).Semaphore(n, 1).ForceRelease(ctx, rand.Text())
	for i := range e.addrs {
		after := e.keysUnder(t, ctx, i, lockKey(n))
		slices.Sort(after)
		if !slices.Equal(after, before[i]) {
			t.Fatalf("ForceRelease of a holder token that holds nothing (returned %v) wrote node %d's keys %v, had %v: it must write nothing", err, i, after, before[i])
		}
	}
	if !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("ForceRelease of a holder token that holds nothing: %v, want ErrNotHeld", err)
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("the holder's Extend after a force-release of another token: %v", err)
	}
	unlockOnce(t, ctx, l)
}
