package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testRWState reads RWMutex.State through a known life of one name: free;
// two read leases, each with its ID and TTL on a majority, and a writer
// that waits for them; that writer holding the write lock once the
// readers left, with its ID, token and TTL; free again.
func testRWState(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = 10 * time.Second
	rw := e.client(t).RWMutex(n, core.WithTTL(ttl))
	state := func(what string) core.RWMutexState {
		t.Helper()
		s, err := rw.State(ctx)
		if err != nil {
			t.Fatalf("State %s: %v", what, err)
		}
		if len(s.PerNode) != len(e.addrs) {
			t.Fatalf("State %s: %d nodes' views, want %d", what, len(s.PerNode), len(e.addrs))
		}
		return s
	}
	if s := state("of a new name"); s.Locked || s.Writer != "" || len(s.Readers) != 0 || s.WaitingWriters != 0 || s.WaitingReaders != 0 {
		t.Fatalf("State of a new name: %+v, want free with no one waiting", s)
	}
	r1 := mustLock(t, ctx, rw.RLock)
	r2 := mustLock(t, ctx, rw.RLock)
	s := state("with two readers")
	if s.Locked || len(s.Readers) != 2 || s.Readers[0].ID == s.Readers[1].ID {
		t.Fatalf("State with two readers: %+v, want their two read leases and no writer", s)
	}
	for _, r := range s.Readers {
		if (r.ID != r1.ID() && r.ID != r2.ID()) || r.TTL <= ttl-2*time.Second || r.TTL > ttl {
			t.Fatalf("State with two readers: reader %+v, want %q or %q with a TTL of about %v", r, r1.ID(), r2.ID(), ttl)
		}
	}
	both := 0
	for _, nd := range s.PerNode {
		if nd.Readers == 2 && len(nd.ReadLeases) == 2 {
			both++
		}
	}
	if both < len(e.addrs)/2+1 {
		t.Fatalf("State with two readers: %+v, want a majority of nodes with both read leases", s)
	}

	wctx, stop := context.WithCancel(ctx)
	defer stop()
	won := make(chan *core.Lease, 1)
	go func() {
		w, err := e.client(t, core.WithNodeTimeout(time.Second)).RWMutex(n, core.WithTTL(ttl)).Lock(wctx)
		if err != nil {
			t.Errorf("the writer's Lock: %v", err)
		}
		won <- w
	}()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		s := state("with a waiting writer")
		listed := 0
		for _, nd := range s.PerNode {
			if len(nd.Writers) == 1 && nd.Writers[0].Lapses > 0 {
				listed++
			}
		}
		if s.WaitingWriters == 1 && listed >= len(e.addrs)/2+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("State 5s after a writer began to wait: %+v, want it waiting", s)
		}
	}
	for _, r := range []*core.Lease{r1, r2} {
		if err := r.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w := <-won
	if w == nil {
		return
	}
	s = state("with a writer")
	if !s.Locked || s.Writer != w.ID() || s.Token != w.Token() || s.Nodes < len(e.addrs)/2+1 || len(s.Readers) != 0 || s.WaitingWriters != 0 || s.TTL <= ttl-2*time.Second || s.TTL > ttl {
		t.Fatalf("State with a writer: %+v, want written by %q with token %d on %d nodes for about %v, no reader, no one waiting", s, w.ID(), w.Token(), len(e.addrs), ttl)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s := state("after every unlock"); s.Locked || s.Writer != "" || len(s.Readers) != 0 || s.Token != w.Token() {
		t.Fatalf("State after every unlock: %+v, want free, the last token %d", s, w.Token())
	}
}
