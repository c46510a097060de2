package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testMutexState reads Mutex.State through a known life of one name: free;
// held by a lease (its ID, token and TTL, on every node), with a waiter,
// which under Notify is in the line and under Poll is not; held by the
// waiter after the hand-on; held by one node less after its key is deleted
// there (on three or more nodes); re-entered twice by an owner (hold count
// 2, then 1); free again, with the last grant's token.
func testMutexState(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = 10 * time.Second
	// A round decided by a majority may leave the others out.
	majority := len(e.addrs)/2 + 1
	m := e.client(t).Mutex(n, core.WithTTL(ttl))
	state := func(what string) core.MutexState {
		t.Helper()
		s, err := m.State(ctx)
		if err != nil {
			t.Fatalf("State %s: %v", what, err)
		}
		if len(s.PerNode) != len(e.addrs) {
			t.Fatalf("State %s: %d nodes' views, want %d", what, len(s.PerNode), len(e.addrs))
		}
		return s
	}
	if s := state("of a new name"); s.Locked || s.Holder != "" || s.Holds != 0 || s.Nodes != 0 || s.TTL != 0 || s.Waiting != 0 {
		t.Fatalf("State of a new name: %+v, want free with no one waiting", s)
	}

	l := mustLock(t, ctx, m.Lock)
	s := state("while held")
	if !s.Locked || s.Holder != l.ID() || s.Owned || s.Holds != 1 || s.Nodes < majority || s.Token != l.Token() {
		t.Fatalf("State while held: %+v, want Locked by %q with token %d on %d nodes or more, hold count 1", s, l.ID(), l.Token(), majority)
	}
	if s.TTL <= ttl-2*time.Second || s.TTL > ttl {
		t.Fatalf("State while held: TTL %v, want in (%v, %v]", s.TTL, ttl-2*time.Second, ttl)
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	won := make(chan *core.Lease, 1)
	go func() {
		w, err := e.client(t, core.WithNodeTimeout(time.Second)).Mutex(n, core.WithTTL(ttl)).Lock(wctx)
		if err != nil {
			t.Errorf("the waiter's Lock: %v", err)
		}
		won <- w
	}()
	e.awaitMutexWaiter(t, ctx, n)
	want := 0
	if e.strategy == core.Notify {
		want = 1
	}
	if s := state("with a waiter"); s.Waiting != want || s.Holder != l.ID() {
		t.Fatalf("State with a %v waiter: Waiting %d, Holder %q; want %d, %q", e.strategy, s.Waiting, s.Holder, want, l.ID())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-won
	if w == nil {
		return
	}
	if s := state("after the hand-on"); s.Holder != w.ID() || s.Token != w.Token() || s.Waiting != 0 {
		t.Fatalf("State after the waiter took the lock: %+v, want held by %q with token %d and no one waiting", s, w.ID(), w.Token())
	}
	if len(e.addrs) >= 3 {
		before := state("before a deletion")
		i := slices.IndexFunc(before.PerNode, func(nd core.MutexNodeState) bool { return nd.Holder == w.ID() })
		if err := e.admin(t, i).Del(ctx, lockKey(n)).Err(); err != nil {
			t.Fatal(err)
		}
		s := state("with the key deleted on a node")
		holding := 0
		for _, nd := range s.PerNode {
			if nd.Holder == w.ID() {
				holding++
			}
		}
		if holding != before.Nodes-1 || s.PerNode[i].Holder != "" || s.Locked != (holding >= majority) || (s.Locked && (s.Holder != w.ID() || s.Nodes != holding)) {
			t.Fatalf("State with the key deleted on node %d: %+v, want held by %q on %d nodes, not on node %d", i, s, w.ID(), before.Nodes-1, i)
		}
	}
	// With the key deleted on a node, the lease may have lost its majority.
	if err := w.Unlock(ctx); err != nil && !errors.Is(err, core.ErrNotHeld) {
		t.Fatal(err)
	}

	owned := e.client(t).Mutex(n, core.WithOwner("worker-1"))
	o1 := mustLock(t, ctx, owned.Lock)
	o2 := mustLock(t, ctx, owned.Lock)
	if s := state("re-entered"); !s.Locked || s.Holder != "worker-1" || !s.Owned || s.Holds != 2 || s.Token != o2.Token() {
		t.Fatalf("State of an owner's lock entered twice: %+v, want held by owner worker-1, hold count 2, token %d", s, o2.Token())
	}
	if err := o2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s := state("re-entered and left once"); s.Holder != "worker-1" || s.Holds != 1 {
		t.Fatalf("State of an owner's lock entered twice and left once: %+v, want hold count 1", s)
	}
	if err := o1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s := state("after every unlock"); s.Locked || s.Holder != "" || s.Holds != 0 || s.TTL != 0 || s.Token != o2.Token() {
		t.Fatalf("State after every unlock: %+v, want free, the last token %d", s, o2.Token())
	}
}
