package conformance

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testFairState reads FairMutex.State while a lease holds the lock and two
// waiters of two Clients wait: the holder's ID, token and TTL on every
// node, and on a majority of nodes both waiters in line, each with its place's time
// left. A waiter's ID is its current token, which names its Client first
// (a waiter that rejoins the line takes a new one). After the hand-on the
// next holder's ID is the holder's, and the other waiter alone is in line.
func testFairState(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = 10 * time.Second
	m := e.client(t).FairMutex(n, core.WithTTL(ttl))
	state := func(what string) core.MutexState {
		t.Helper()
		s, err := m.State(ctx)
		if err != nil {
			t.Fatalf("State %s: %v", what, err)
		}
		return s
	}
	if s := state("of a new name"); s.Locked || s.Waiting != 0 || len(s.PerNode) != len(e.addrs) || s.PerNode[0].Line != nil {
		t.Fatalf("State of a new name: %+v, want free with no one waiting", s)
	}
	l := mustLock(t, ctx, m.Lock) // waits out a replica slow to acknowledge on a loaded machine
	if s := state("while held"); !s.Locked || s.Holder != l.ID() || s.Holds != 1 || s.Token != l.Token() || s.Nodes < len(e.addrs)/2+1 || s.TTL <= ttl-2*time.Second || s.TTL > ttl {
		t.Fatalf("State while held: %+v, want held by %q with token %d on %d nodes for about %v", s, l.ID(), l.Token(), len(e.addrs), ttl)
	}

	// clients are the Clients with a waiter in a node's line.
	clients := func(line []core.Waiter) map[string]bool {
		c := map[string]bool{}
		for _, w := range line {
			if w.Lapses <= 0 || w.Lapses > ttl {
				t.Fatalf("State: waiter %q's place lapses in %v, want in (0, %v]", w.ID, w.Lapses, ttl)
			}
			c[strings.SplitN(w.ID, ":", 2)[0]] = true
		}
		return c
	}
	// inLine waits until every node's line holds waiters of the same
	// want Clients, and returns the state and those Clients.
	inLine := func(want int) (core.MutexState, map[string]bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			// A majority of nodes, whose lines decide, suffices.
			s := state("with waiters")
			for _, nd := range s.PerNode {
				line, agree := clients(nd.Line), 0
				for _, other := range s.PerNode {
					got := clients(other.Line)
					if len(got) == want && other.Waiting >= want && maps.Equal(got, line) {
						agree++
					}
				}
				if agree >= len(e.addrs)/2+1 {
					return s, line
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("State after 5s: %+v, want the waiters of %d Clients in a majority of nodes' lines", s, want)
			}
		}
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	won := make(chan *core.Lease, 2)
	for i := range 2 {
		go func() {
			// A node timeout that a loaded machine does not run out.
			w, err := e.client(t, core.WithNodeTimeout(time.Second)).FairMutex(n, core.WithTTL(ttl)).Lock(wctx)
			if err != nil && wctx.Err() == nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			won <- w
		}()
	}
	_, waiting := inLine(2)
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	next := <-won
	if next == nil {
		return
	}
	defer next.Unlock(ctx)
	holder := strings.SplitN(next.ID(), ":", 2)[0]
	s, left := inLine(1)
	if s.Holder != next.ID() || s.Token != next.Token() || !waiting[holder] || left[holder] {
		t.Fatalf("State after the hand-on: %+v, want held by %q with token %d, and the other of the Clients %v in line", s, next.ID(), next.Token(), waiting)
	}
	stop()
	<-won
}
