package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// permitsInForce is the number of permits a majority of nodes has in force.
func permitsInForce(t *testing.T, ctx context.Context, s *core.Semaphore) int {
	t.Helper()
	st, err := s.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size
}

// testSemaphoreTrySetPermits: TrySetPermits stores a number only while
// none is stored, whatever number the Semaphore was made with, and every
// Client then has it.
func testSemaphoreTrySetPermits(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.client(t).Semaphore(n, 2)
	if set, err := s.TrySetPermits(ctx, 5); err != nil || !set {
		t.Fatalf("TrySetPermits(5) of a semaphore made with 2 and never set: got (%v, %v), want true", set, err)
	}
	other := e.client(t).Semaphore(n, 1)
	if free, err := other.Available(ctx); err != nil || free != 5 {
		t.Fatalf("Available after TrySetPermits(5), from a Client made with 1: got (%d, %v), want 5", free, err)
	}
	if set, err := other.TrySetPermits(ctx, 3); err != nil || set {
		t.Fatalf("TrySetPermits(3) once 5 is stored: got (%v, %v), want false", set, err)
	}
	if got := permitsInForce(t, ctx, other); got != 5 {
		t.Fatalf("permits after a refused TrySetPermits(3): %d, want 5", got)
	}
	if err := s.SetPermits(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if set, err := s.TrySetPermits(ctx, 1); err != nil || set {
		t.Fatalf("TrySetPermits(1) after SetPermits(4): got (%v, %v), want false", set, err)
	}
	if got := permitsInForce(t, ctx, s); got != 4 {
		t.Fatalf("permits after a refused TrySetPermits(1): %d, want 4", got)
	}
}

// testSemaphoreAddPermits raises and lowers the number of permits: from
// the one the Semaphore was made with while none is stored; below the
// permits in use without taking any from their lease; never out of range,
// which is refused with nothing written.
func testSemaphoreAddPermits(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.client(t).Semaphore(n, 2)
	if err := s.AddPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if free, err := e.client(t).Semaphore(n, 1).Available(ctx); err != nil || free != 5 {
		t.Fatalf("Available after AddPermits(3) to a semaphore made with 2, from a Client made with 1: got (%d, %v), want 5", free, err)
	}
	four, err := s.TryAcquire(ctx, 4)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.AddPermits(ctx, -3); err != nil {
		t.Fatalf("AddPermits(-3) of 5 with 4 in use: %v", err)
	}
	if free, err := s.Available(ctx); err != nil || free != 0 {
		t.Fatalf("Available with 4 in use of 2: got (%d, %v), want 0", free, err)
	}
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire(1) with 4 in use of 2: got %v, want ErrNotAcquired", err)
	}
	if err := four.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend of a lease beyond a lowered number: %v", err)
	}
	for _, bad := range []int{0, -2, -3, core.MaxSemaphorePermits, core.MaxSemaphorePermits + 1, -core.MaxSemaphorePermits - 1} {
		if err := s.AddPermits(ctx, bad); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("AddPermits(%d) of 2: got %v, want ErrInvalid", bad, err)
		}
	}
	if got := permitsInForce(t, ctx, s); got != 2 {
		t.Fatalf("permits after refused AddPermits: %d, want 2", got)
	}
	if err := s.AddPermits(ctx, core.MaxSemaphorePermits-2); err != nil {
		t.Fatalf("AddPermits up to MaxSemaphorePermits: %v", err)
	}
	if got := permitsInForce(t, ctx, s); got != core.MaxSemaphorePermits {
		t.Fatalf("permits after AddPermits up to MaxSemaphorePermits: %d, want %d", got, core.MaxSemaphorePermits)
	}
	if err := s.AddPermits(ctx, 1); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("AddPermits(1) of MaxSemaphorePermits: got %v, want ErrInvalid", err)
	}
	if err := four.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testSemaphoreAddPermitsCopy: AddPermits(1) succeeds on every node, and
// a copy of its request, sent twice by the network, lands later. The
// number in force must be the one the caller asked for: a copy that
// added again would let more permits be held than the operator allowed.
func testSemaphoreAddPermitsCopy(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Op == "SemaphoreAddPermits" && c.N == 1 {
			return faults.Fault{Kind: faults.Duplicate, After: time.Hour}
		}
		return faults.Fault{}
	})
	defer flush(fds)
	if err := c.Semaphore(n, 2).AddPermits(ctx, 1); err != nil {
		t.Fatalf("AddPermits(1): %v", err)
	}
	flush(fds) // the copies land
	s := e.client(t).Semaphore(n, 2)
	if got := permitsInForce(t, ctx, s); got != 3 {
		l, err := s.TryAcquire(ctx, got)
		if err == nil {
			defer l.Unlock(ctx)
		}
		t.Fatalf("permits in force after one AddPermits(1) to 2, its request copied on every node: %d, want 3 (TryAcquire(%d): %v): more permits may be held than the total the caller set", got, got, err)
	}
}

// testSemaphoreTrySetPermitsRetried: TrySetPermits(3) on a semaphore with
// no number stored, its request sent again on every node after a lost
// reply. It stored the number, so it must say so: a false tells the
// caller that another had stored one first.
func testSemaphoreTrySetPermitsRetried(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.sentTwiceClient(t, "SemaphoreTrySetPermits")
	ok, err := c.Semaphore(n, 2).TrySetPermits(ctx, 3)
	if err != nil || !ok {
		t.Fatalf("TrySetPermits(3) where none was stored, its request sent again after a lost reply: got (%v, %v), want (true, nil): %d permits are in force, which it stored itself", ok, err, permitsInForce(t, ctx, e.client(t).Semaphore(n, 2)))
	}
}

// testSemaphoreAddPermitsRetried: AddPermits(-1) to a semaphore of 2, its
// request sent again on every node after a lost reply. The copy must
// neither take a second permit away nor, finding that a second one would
// leave none, report the call refused: the call took its permit.
func testSemaphoreAddPermitsRetried(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.sentTwiceClient(t, "SemaphoreAddPermits")
	err := c.Semaphore(n, 2).AddPermits(ctx, -1)
	if got := permitsInForce(t, ctx, e.client(t).Semaphore(n, 2)); err != nil || got != 1 {
		t.Fatalf("AddPermits(-1) to 2, its request sent again after a lost reply: %d permits in force, want 1; returned %v, want nil", got, err)
	}
}
