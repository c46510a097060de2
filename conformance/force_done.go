package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testForceClosesDone forces a Mutex whose holder has read its Done and
// just extended it, while a waiter waits: the hand-on sets the lock to
// the waiter's token, and the former holder's Done closes within a
// second, with ErrLost, rather than at its validity deadline.
func testForceClosesDone(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t, unhurried, core.WithTTL(30*time.Second)).Mutex(n).Lock)
	done := held.Done()
	e.listening(t, ctx, lockKey(n))
	got := e.inLine(t, ctx, queueKey(n), 1, e.client(t, unhurried, core.WithTTL(time.Minute)).Mutex(n).Lock)
	if err := held.Extend(ctx, 30*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	forced := time.Now()
	if err := e.client(t, unhurried).Mutex(n).ForceUnlock(ctx); err != nil {
		t.Fatalf("force-release with a waiter: %v", err)
	}
	w := expectWoken(t, got, forced)
	defer unlockOnce(t, ctx, w)
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("the forced holder's Done still open a second after its lock was handed on (Err %v); it claims %v more", held.Err(), time.Until(held.Until()).Round(time.Second))
	}
	if err := held.Err(); !errors.Is(err, core.ErrLost) {
		t.Fatalf("the forced holder's Err: %v, want ErrLost", err)
	}
}
