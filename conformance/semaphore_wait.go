package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreRaiseWakes checks that raising the number of permits (by
// SetPermits or AddPermits) wakes a waiter at once, as a release does, not
// at the holder's TTL.
func testSemaphoreRaiseWakes(raise func(context.Context, *core.Semaphore) error) func(*testing.T, env) {
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		s := e.client(t).Semaphore(n, 1)
		if _, err := s.TryAcquire(ctx, 1); err != nil {
			t.Fatal(err)
		}
		got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 1), 1)
		raised := time.Now()
		if err := raise(ctx, s); err != nil {
			t.Fatal(err)
		}
		expectWoken(t, got, raised).Unlock(ctx)
	}
}

// semWaiter starts s.Acquire(n) in a goroutine and returns once it waits:
// under Notify once it is in line (the first waiter there).
func (e env) semWaiter(t *testing.T, ctx context.Context, s *core.Semaphore, n int) <-chan locked {
	t.Helper()
	if e.strategy == core.Notify {
		return e.inLine(t, ctx, semKey(s.Name(), ":q"), 1, func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, n) })
	}
	got := startLock(ctx, func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, n) })
	time.Sleep(100 * time.Millisecond)
	return got
}

// awaitWatching waits until a waiter watches key: under Notify until it is
// subscribed, under Poll for a moment. (A Mutex waiter watches no key: see
// awaitMutexWaiter.)
func (e env) awaitWatching(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	if e.strategy == core.Notify {
		e.awaitSubscribed(t, ctx, key)
		return
	}
	time.Sleep(100 * time.Millisecond)
}

// testSemaphoreWakesOnRelease checks that a release wakes a waiter at
// once: the holder's TTL (10s) is far beyond wokenWithin.
func testSemaphoreWakesOnRelease(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.client(t).Semaphore(n, 2).TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 2), 1)
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := expectWoken(t, got, released)
	if l.Token() <= held.Token() {
		t.Errorf("the waiter's token %d is not above the holder's %d", l.Token(), held.Token())
	}
	l.Unlock(ctx)
}

// testSemaphoreWakePassesOn has three waiters in one Client wait for one
// permit each while one lease holds all three: its release must let all
// three in at once. (A keyspace event wakes one waiter per Client; the
// woken one that finds permits left passes the wake-up on.)
func testSemaphoreWakePassesOn(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.client(t).Semaphore(n, 3).TryAcquire(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	c := e.client(t, core.WithNodeTimeout(time.Second)) // a waiter's attempt that timed out fails its Acquire
	const waiters = 3
	var got [waiters]<-chan locked
	for i := range got {
		if e.strategy == core.Notify {
			got[i] = e.inLine(t, ctx, semKey(n, ":q"), int64(i+1), func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 3).Acquire(ctx, 1) })
		} else {
			got[i] = startLock(ctx, func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 3).Acquire(ctx, 1) })
		}
	}
	time.Sleep(100 * time.Millisecond) // all three wait
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, w := range got {
		expectWoken(t, w, released)
	}
}

// testSemaphoreFirstComeFirstServed checks that under Notify waiters take
// permits in the order they joined the line, and that a release keeps the
// permit for the waiter first in line: a TryAcquire right after it fails.
func testSemaphoreFirstComeFirstServed(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.client(t).Semaphore(n, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got [3]<-chan locked
	for i := range got {
		s := e.client(t).Semaphore(n, 1)
		got[i] = e.inLine(t, ctx, semKey(n, ":q"), int64(i+1), func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, 1) })
	}
	barger := e.client(t).Semaphore(n, 1)
	for i := range got {
		released := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if l, err := barger.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
			if l != nil {
				l.Unlock(ctx)
			}
			t.Fatalf("TryAcquire right after release %d: %v, want ErrNotAcquired: the permit goes to the waiter first in line", i, err)
		}
		held = expectWoken(t, got[i], released)
		for j, later := range got[i+1:] {
			if len(later) > 0 {
				t.Fatalf("waiter %d acquired before waiter %d, which joined the line before it", i+1+j, i)
			}
		}
	}
	held.Unlock(ctx)
}

func testSemaphoreContextEndsWait(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	if _, err := e.client(t).Semaphore(n, 1).TryAcquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err := e.client(t).Semaphore(n, 1).Acquire(short, 1)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Acquire past its deadline: got %v, want only context.DeadlineExceeded", err)
	}
	_, err = e.client(t).Semaphore(n, 1, core.WithMaxAttempts(3)).Acquire(ctx, 1)
	if !errors.Is(err, core.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire out of attempts: got %v, want only ErrNotAcquired", err)
	}
}
