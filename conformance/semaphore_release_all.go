package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreReleaseAll: Semaphore.ReleaseAll gives back the permits
// of several leases by permit ID, all or none. With one of them released
// already it gives back none and names that one; with all held, all, and
// each lease's Unlock reports the release by ID, and a waiter is woken.
// Bad input writes nothing. With a quorum, a node where one lease lost its
// slot gives back none there, and the call holds on the majority that
// gave them all back.
func testSemaphoreReleaseAll(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	owner, other := e.client(t, patient, core.WithTTL(time.Minute)).Semaphore(n, 4), e.client(t, patient).Semaphore(n, 4)
	var ls []*core.Lease
	for _, k := range []int{1, 2, 1} {
		l, err := owner.TryAcquire(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		e.slotsOnEveryNode(t, ctx, n, l.ID())
		ls = append(ls, l)
	}
	a, b, c := ls[0].ID(), ls[1].ID(), ls[2].ID()
	free := func(want int) {
		t.Helper()
		if got, err := other.Available(ctx); err != nil || got != want {
			t.Fatalf("Available: got (%d, %v), want %d", got, err, want)
		}
	}
	for _, bad := range [][]string{nil, {a, a}, {b, "1-" + b[2:]}, {a, "nope"}, {a, strings.ToLower(b)}, make([]string, core.MaxSemaphoreReleaseAll+1)} {
		if err := other.ReleaseAll(ctx, bad...); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("ReleaseAll(%q): got %v, want ErrInvalid", bad, err)
		}
	}
	free(0)

	if err := other.Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	err := other.ReleaseAll(ctx, a, b, c)
	if !errors.Is(err, core.ErrNotHeld) || !strings.Contains(err.Error(), b) || strings.Contains(err.Error(), a) || strings.Contains(err.Error(), c) {
		t.Fatalf("ReleaseAll with %s released before: got %v, want ErrNotHeld naming it alone", b, err)
	}
	free(2) // b's alone
	for _, l := range []*core.Lease{ls[0], ls[2]} {
		if err := l.Extend(ctx, time.Minute); err != nil {
			t.Fatalf("Extend of a lease that the refused ReleaseAll named: %v", err)
		}
	}

	if len(e.addrs) >= 3 { // a node where c lost its slot gives back none
		r := e.admin(t, 0)
		if err := r.HDel(ctx, semKey(n, ":holders"), holdersTokenField+strings.Split(c, "-")[1]).Err(); err != nil {
			t.Fatal(err)
		}
	}
	all := func(ctx context.Context) (*core.Lease, error) {
		return e.client(t, patient, core.WithTTL(time.Minute)).Semaphore(n, 4).Acquire(ctx, 4)
	}
	var waiter <-chan locked
	if e.strategy == core.Notify {
		waiter = e.inLine(t, ctx, semKey(n, ":q"), 1, all)
	} else {
		waiter = startLock(ctx, all)
	}
	released := time.Now()
	if err := other.ReleaseAll(ctx, a, c); err != nil {
		t.Fatalf("ReleaseAll of leases that hold: %v", err)
	}
	if len(e.addrs) >= 3 {
		if held, err := e.admin(t, 0).HExists(ctx, semKey(n, ":holders"), holdersTokenField+strings.Split(a, "-")[1]).Result(); err != nil || !held {
			t.Fatalf("node 0, where %s no longer held, gave back %s all the same (%v, %v)", c, a, held, err)
		}
	}
	select {
	case r := <-waiter:
		if r.err != nil {
			t.Fatalf("the waiter for every permit: %v", r.err)
		}
		if e.strategy == core.Notify && time.Since(released) > 2*time.Second {
			t.Errorf("the waiter took the permits %v after ReleaseAll, want it woken at once", time.Since(released))
		}
		r.l.Unlock(ctx)
	case <-time.After(15 * time.Second):
		t.Fatal("the waiter for every permit did not take them within 15s of ReleaseAll")
	}
	for _, l := range []*core.Lease{ls[0], ls[2]} {
		if err := l.Unlock(ctx); !errors.Is(err, core.ErrLost) || !strings.Contains(err.Error(), "Semaphore.Release") {
			t.Fatalf("Unlock of a lease ReleaseAll gave back: got %v, want ErrLost saying Semaphore.Release gave its permits back", err)
		}
	}
}

// slotsOnEveryNode waits until every node holds the slots of the lease
// with permit ID id: a round returns once a majority answered.
func (e env) slotsOnEveryNode(t *testing.T, ctx context.Context, n, id string) {
	t.Helper()
	field := "t:" + strings.Split(id, "-")[1]
	for i := range e.addrs {
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if ok, err := e.admin(t, i).HExists(ctx, semKey(n, ":holders"), field).Result(); err == nil && ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d does not hold the slots of %s 5s after its acquisition", i, id)
			}
		}
	}
}

// testSemaphoreReleaseAllRetried: ReleaseAll of two leases, its request
// sent again on every node after a lost reply. The first gave the
// permits back, so the call must say so: the copy, finding them free,
// must not report them not held.
func testSemaphoreReleaseAllRetried(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.client(t, patient).Semaphore(n, 2)
	var ids []string
	for range 2 {
		l, err := s.TryAcquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		e.slotsOnEveryNode(t, ctx, n, l.ID())
		ids = append(ids, l.ID())
	}
	if err := e.sentTwiceClient(t, "SemaphoreReleaseAll", patient).Semaphore(n, 2).ReleaseAll(ctx, ids...); err != nil {
		t.Fatalf("ReleaseAll, its request sent again after a lost reply: %v, want nil: it gave the permits back", err)
	}
	if free, err := s.Available(ctx); err != nil || free != 2 {
		t.Fatalf("Available after ReleaseAll: got (%d, %v), want 2", free, err)
	}
}
