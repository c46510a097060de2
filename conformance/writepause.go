package conformance

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testWritePauseWaitedOut: a FairMutex holder and a waiter on servers of
// the case's own, whose writes a majority pauses (CLIENT PAUSE WRITE) for
// two seconds. Every Lock whose context outlives the pause waits it out:
// the waiter, and one that starts during the pause, each acquire in turn
// once the holder, whose lease holds through the pause, unlocks. A
// TryLock during the pause answers before the pause ends, with
// ErrNoQuorum: the paused servers did not answer.
func testWritePauseWaitedOut(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	addrs := ownNodes(t, ctx, e, len(e.addrs))
	const pause = 2 * time.Second
	fast := core.WithNodeTimeout(250 * time.Millisecond)
	holder := e.clientOn(t, addrs, fast, core.WithTTL(5*time.Second), core.WithAutoExtend())
	// A waiter refreshes its place in line by an attempt at least every
	// 1.5s with this TTL: one of them meets the pause.
	waiters := e.clientOn(t, addrs, fast, core.WithTTL(3*time.Second))
	h, err := holder.FairMutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("the holder's Lock: %v", err)
	}
	type held struct {
		from, to time.Time
		err      error
	}
	got := make(chan held, 2)
	lock := func() {
		l, err := waiters.FairMutex(n).Lock(ctx)
		if err != nil {
			got <- held{err: err}
			return
		}
		from := time.Now()
		time.Sleep(100 * time.Millisecond)
		got <- held{from, time.Now(), l.Unlock(ctx)}
	}
	go lock()
	time.Sleep(300 * time.Millisecond) // the waiter's first attempt, refused, queued it
	majority := addrs[:len(addrs)/2+1]
	for _, a := range majority {
		// Ended by CLIENT UNPAUSE below; the timeout only bounds a case that fails.
		if err := plain(t, a).Do(ctx, "CLIENT", "PAUSE", 20000, "WRITE").Err(); err != nil {
			t.Fatalf("CLIENT PAUSE on %s: %v", a, err)
		}
	}
	pausedAt := time.Now()
	go lock() // its first attempt meets the pause
	_, err = waiters.FairMutex(n).TryLock(ctx)
	if took := time.Since(pausedAt); !errors.Is(err, core.ErrNoQuorum) || errors.Is(err, core.ErrUnavailable) || took >= pause {
		t.Errorf("TryLock with the writes of a majority paused: got %v after %v, want ErrNoQuorum before the pause ends", err, took.Round(time.Millisecond))
	}
	time.Sleep(time.Until(pausedAt.Add(pause)))
	for _, a := range majority {
		if err := plain(t, a).Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
			t.Fatalf("CLIENT UNPAUSE on %s: %v", a, err)
		}
	}
	if err := h.Err(); err != nil {
		t.Fatalf("the holder's lease after a %v pause, within its TTL: %v ", pause, err)
	}
	released := time.Now()
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock after the pause: %v", err)
	}
	var leases []held
	for range 2 {
		r := <-got
		if r.err != nil {
			t.Fatalf("a waiter's Lock (or Unlock), whose context outlived the pause: %v", r.err)
		}
		leases = append(leases, r)
	}
	slices.SortFunc(leases, func(a, b held) int { return a.from.Compare(b.from) })
	if leases[0].from.Before(released) || leases[1].from.Before(leases[0].to) {
		t.Fatalf("the waiters held at %v–%v and %v–%v, not one after the other after the holder's release at %v",
			leases[0].from, leases[0].to, leases[1].from, leases[1].to, released)
	}
}
