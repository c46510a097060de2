package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreSameSlots builds the split that counting permits per node
// would get wrong: with 2 permits, lease A holds slot 1 on the first
// majority of nodes and lease B slot 2 on the last, so every node but the
// middle has one permit free, yet on different slots. A third lease must
// not be granted, and its attempt must leave no slot behind. Given a third
// permit, a lease must be granted, though the nodes' lowest free slots
// still differ.
func testSemaphoreSameSlots(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	nodes := len(e.addrs)
	q := nodes/2 + 1
	for i := range q {
		e.fakeSlot(t, ctx, i, n, "1", "lease-A")
		e.fakeSlot(t, ctx, nodes-q+i, n, "2", "lease-B")
	}
	s := e.client(t).Semaphore(n, 2)
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire(1) where two leases hold both permits on majorities: got %v, want ErrNotAcquired", err)
	}
	for i := range nodes {
		want := int64(1)
		if i >= nodes-q && i < q {
			want = 2
		}
		if got := e.heldSlots(t, ctx, i, n); got != want {
			t.Fatalf("node %d holds %d slots after the refused attempt, want %d: it left a slot behind", i, got, want)
		}
	}
	if free, err := s.Available(ctx); err != nil || free != 1 {
		// Each node but the middle has one free: a majority does.
		t.Fatalf("Available: got (%d, %v), want 1", free, err)
	}
	// With a third permit, slot 3 is free everywhere, while the lowest free
	// slot still differs between the nodes: the acquisition must find it.
	if err := s.SetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	third, err := s.Acquire(short, 1)
	if err != nil {
		t.Fatalf("Acquire(1) with a slot free on every node: %v", err)
	}
	if err := third.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// A minority that gives other slots gives them back. With slot 1 taken
	// on node 0 only, an attempt whose scan starts at slot 1 gets slot 2
	// there and slot 1 on the rest: it holds slot 1 and must give node 0's
	// slot 2 back. Whatever the start, the lease's slots end up the same on
	// every node that has any.
	m := name(t)
	e.fakeSlot(t, ctx, 0, m, "1", "lease-C")
	// Patient: a node that timed out, with node 0 still holding the last
	// lease's slot 2 (its give-back pending), leaves too few.
	c := e.client(t, patient)
	for range 8 { // both starts, almost surely
		l, err := c.Semaphore(m, 2).TryAcquire(ctx, 1)
		if err != nil {
			t.Fatalf("TryAcquire(1) with slot 1 taken on node 0 only: %v", err)
		}
		var want string
		for i := range nodes {
			holders, err := e.admin(t, i).HGetAll(ctx, semKey(m, ":holders")).Result()
			if err != nil {
				t.Fatal(err)
			}
			for slot, token := range holders {
				if strings.HasPrefix(slot, holdersTokenField) || token == "lease-C" {
					continue
				}
				if want == "" {
					want = slot
				}
				if slot != want {
					t.Fatalf("node %d: the lease holds slot %s, and slot %s elsewhere: the minority's slot was not given back", i, slot, want)
				}
			}
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func testSemaphoreMinorityDown(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	addrs, down := e.withDown(t, e.tolerated())
	s := e.clientOn(t, addrs).Semaphore(n, 2)
	down()
	l, err := s.Acquire(ctx, 2)
	if err != nil {
		t.Fatalf("Acquire with a minority down: %v", err)
	}
	if free, err := s.Available(ctx); err != nil || free != 0 {
		t.Fatalf("Available with a minority down: got (%d, %v), want 0", free, err)
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend with a minority down: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with a minority down: %v", err)
	}
	if err := s.SetPermits(ctx, 3); err != nil {
		t.Fatalf("SetPermits with a minority down: %v", err)
	}

	addrs, down = e.withDown(t, e.tolerated()+1)
	s = e.clientOn(t, addrs).Semaphore(name(t), 2)
	down()
	failFastWithMajorityDown(t, []namedCall{
		{"Available", func() error { _, err := s.Available(ctx); return err }},
		{"SetPermits", func() error { return s.SetPermits(ctx, 3) }},
	})
	waitsOut(t, ctx, "Acquire", func(ctx context.Context) error { _, err := s.Acquire(ctx, 1); return err })
}

// testSemaphoreCleansUp fills the semaphore on a majority behind the
// library's back: the refused attempt must leave nothing on the nodes
// that granted it, once their late answers are undone.
func testSemaphoreCleansUp(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	nodes := len(e.addrs)
	q := nodes/2 + 1
	for i := nodes - q; i < nodes; i++ {
		e.fakeSlot(t, ctx, i, n, "1", "someone-else")
	}
	if _, err := e.client(t).Semaphore(n, 1).TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire full on a majority: got %v, want ErrNotAcquired", err)
	}
	// A node that answered after the round was decided is undone then.
	for i := range nodes - q {
		if !eventually(2*time.Second, func() bool { return e.heldSlots(t, ctx, i, n) == 0 }) {
			t.Fatalf("node %d: the failed attempt left %d slots 2s after TryAcquire returned", i, e.heldSlots(t, ctx, i, n))
		}
	}
	for i := nodes - q; i < nodes; i++ {
		if v, _ := e.admin(t, i).HGet(ctx, semKey(n, ":holders"), "1").Result(); v != "someone-else" {
			t.Fatalf("node %d: the failed attempt touched the holder's slot (now %q)", i, v)
		}
	}
}
