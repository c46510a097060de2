package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreDrainPermits: DrainPermits takes every free permit as one
// lease, or none, and no more than MaxSemaphoreAcquire.
func testSemaphoreDrainPermits(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.client(t).Semaphore(n, 5)
	two, err := s.TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	drained, got, err := e.client(t).Semaphore(n, 5).DrainPermits(ctx)
	if err != nil || got != 3 {
		t.Fatalf("DrainPermits with 3 of 5 free: got (%d, %v), want 3", got, err)
	}
	if free, err := s.Available(ctx); err != nil || free != 0 {
		t.Fatalf("Available after DrainPermits: got (%d, %v), want 0", free, err)
	}
	if _, none, err := s.DrainPermits(ctx); !errors.Is(err, core.ErrNotAcquired) || none != 0 {
		t.Fatalf("DrainPermits with none free: got (%d, %v), want ErrNotAcquired", none, err)
	}
	if err := drained.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend of the drained lease: %v", err)
	}
	if err := two.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, drained.ID()); err != nil {
		t.Fatalf("Release of the drained lease by its permit ID: %v", err)
	}
	if free, err := s.Available(ctx); err != nil || free != 5 {
		t.Fatalf("Available after the drained lease was released: got (%d, %v), want 5", free, err)
	}

	big := e.client(t).Semaphore(name(t), core.MaxSemaphoreAcquire+20)
	l, got, err := big.DrainPermits(ctx)
	if err != nil || got != core.MaxSemaphoreAcquire {
		t.Fatalf("DrainPermits of %d free: got (%d, %v), want MaxSemaphoreAcquire", core.MaxSemaphoreAcquire+20, got, err)
	}
	if free, err := big.Available(ctx); err != nil || free != 20 {
		t.Fatalf("Available after draining MaxSemaphoreAcquire of %d: got (%d, %v), want 20", core.MaxSemaphoreAcquire+20, free, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testSemaphoreDrainLeavesLine: under Notify, DrainPermits, as TryAcquire,
// takes nothing while a waiter waits in line for more than is free; the
// waiter takes its permits once they are released.
func testSemaphoreDrainLeavesLine(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	s := e.client(t).Semaphore(n, 3)
	two, err := s.TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 3), 2)
	if _, none, err := e.client(t).Semaphore(n, 3).DrainPermits(ctx); !errors.Is(err, core.ErrNotAcquired) || none != 0 {
		t.Fatalf("DrainPermits of the 1 free permit while a waiter for 2 is in line: got (%d, %v), want ErrNotAcquired", none, err)
	}
	released := time.Now()
	if err := two.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	expectWoken(t, got, released).Unlock(ctx)
}
