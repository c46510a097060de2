package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testReleaseByIDReported: a lease whose permits another Client gave back
// with Semaphore.Release and the lease's permit ID learns it at its next
// Extend or Unlock: ErrLost, saying that Semaphore.Release gave them
// back, and Done closes. A lease that merely expired says nothing of the
// kind.
func testReleaseByIDReported(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	s, other := e.client(t).Semaphore(n, 2), e.client(t).Semaphore(n, 2)
	byID := func(err error) bool {
		return errors.Is(err, core.ErrLost) && strings.Contains(err.Error(), "Semaphore.Release")
	}
	for _, end := range []string{"Extend", "Unlock"} {
		l, err := s.TryAcquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := other.Release(ctx, l.ID()); err != nil {
			t.Fatalf("Release by permit ID: %v", err)
		}
		if end == "Unlock" {
			if err := l.Unlock(ctx); !byID(err) {
				t.Fatalf("Unlock of a lease released by ID: got %v, want ErrLost saying Semaphore.Release gave its permits back", err)
			}
			continue
		}
		if err := l.Extend(ctx, time.Minute); !byID(err) {
			t.Fatalf("Extend of a lease released by ID: got %v, want ErrLost saying Semaphore.Release gave its permits back", err)
		}
		select {
		case <-l.Done():
		default:
			t.Fatal("Done is open after Extend reported the release by ID")
		}
		if err := l.Err(); !byID(err) {
			t.Fatalf("Err after the release by ID: got %v", err)
		}
		if err := l.Unlock(ctx); !byID(err) {
			t.Fatalf("Unlock after Extend reported the release by ID: got %v", err)
		}
	}
	l, err := e.client(t).Semaphore(n, 2, core.WithTTL(200*time.Millisecond)).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, core.ErrLost) || byID(err) {
		t.Fatalf("Extend of an expired lease: got %v, want ErrLost that names no release by ID", err)
	}
}
