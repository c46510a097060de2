package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// Metadata (core.WithMetadata) rides in the lease's token: these cases
// check that it comes back from the lease and from State, and that every
// compare on the token (releases, the native DELIFEQ where the server has
// it, extensions, hand-offs to a waiter, Resume, releases by permit ID)
// still finds the lease.

const (
	holderMeta = `host-7 pid 42 "ü" {x}:-z`
	waiterMeta = "host-8 pid 9"
)

// metadataCases are prim's metadata cases.
func metadataCases(prim string) map[string]func(*testing.T, env) {
	cases := map[string]func(*testing.T, env){"MetadataRefused": testMetadataRefused(prim)}
	switch prim {
	case "Mutex":
		cases["Metadata"] = testMutexMetadata
	case "FairMutex":
		cases["Metadata"] = testFairMetadata
	case "RWMutex":
		cases["Metadata"] = testRWMetadata
	case "Semaphore":
		cases["Metadata"] = testSemaphoreMetadata
	}
	return cases
}

// expectMetadata fails t unless l has metadata m.
func expectMetadata(t *testing.T, what string, l *core.Lease, m string) {
	t.Helper()
	if got := l.Metadata(); got != m {
		t.Fatalf("%s: Lease.Metadata %q, want %q (ID %q)", what, got, m, l.ID())
	}
}

// expectFreed fails t unless no node holds key: the release found the
// lease's token and deleted it.
func (e env) expectFreed(t *testing.T, ctx context.Context, keys ...string) {
	t.Helper()
	for i := range e.addrs {
		if n, err := e.admin(t, i).Exists(ctx, keys...).Result(); err != nil || n != 0 {
			t.Fatalf("after the release node %d has %d of %v (%v), want none", i, n, keys, err)
		}
	}
}

// testMutexMetadata: a lease's metadata through Lease, State, Extend, a
// hand-off to a waiter with metadata of its own, Resume and ForceLock by
// another caller, and a release (native compare-and-delete on Valkey 9).
func testMutexMetadata(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	m := e.client(t).Mutex(n, core.WithMetadata(holderMeta))
	state := func(what, holder, meta string) {
		t.Helper()
		s, err := m.State(ctx)
		if err != nil || !s.Locked || s.Holder != holder || s.Metadata != meta || core.MetadataOf(s.Holder) != meta {
			t.Fatalf("State %s: %+v (%v), want held by %q with metadata %q", what, s, err, holder, meta)
		}
	}
	l := mustLock(t, ctx, m.TryLock)
	expectMetadata(t, "TryLock", l, holderMeta)
	state("while held", l.ID(), holderMeta)
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	state("after Extend", l.ID(), holderMeta)

	got := startLock(ctx, e.client(t).Mutex(n, core.WithMetadata(waiterMeta)).Lock)
	e.awaitMutexWaiter(t, ctx, n)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	w := r.l
	expectMetadata(t, "the waiter's Lock", w, waiterMeta)
	state("after the hand-off", w.ID(), waiterMeta)

	resumed, err := e.client(t).Mutex(n).Resume(ctx, w.ID())
	if err != nil {
		t.Fatalf("Resume(%q): %v", w.ID(), err)
	}
	expectMetadata(t, "Resume", resumed, waiterMeta)
	if err := resumed.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("the resumed lease's Extend: %v", err)
	}

	forced, err := m.ForceLock(ctx)
	if err != nil {
		t.Fatalf("ForceLock: %v", err)
	}
	expectMetadata(t, "ForceLock", forced, holderMeta)
	state("after ForceLock", forced.ID(), holderMeta)
	if err := w.Extend(ctx, time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("the forced-out lease's Extend: %v, want ErrLost", err)
	}
	if err := forced.Unlock(ctx); err != nil {
		t.Fatalf("Unlock after ForceLock: %v", err)
	}
	e.expectFreed(t, ctx, lockKey(n))
	if s, err := m.State(ctx); err != nil || s.Locked || s.Metadata != "" {
		t.Fatalf("State after the release: %+v (%v), want free", s, err)
	}
}

// testFairMetadata: a FairMutex lease's metadata, and its hand-off to a
// waiter with metadata of its own.
func testFairMetadata(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	m := e.client(t).FairMutex(n, core.WithMetadata(holderMeta))
	l := mustLock(t, ctx, m.TryLock)
	expectMetadata(t, "TryLock", l, holderMeta)
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if s, err := m.State(ctx); err != nil || s.Holder != l.ID() || s.Metadata != holderMeta {
		t.Fatalf("State: %+v (%v), want held by %q with metadata %q", s, err, l.ID(), holderMeta)
	}
	got := e.inLine(t, ctx, fairKey(n, ":q"), 1, e.client(t).FairMutex(n, core.WithMetadata(waiterMeta)).Lock)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	expectMetadata(t, "the waiter's Lock", r.l, waiterMeta)
	if s, err := m.State(ctx); err != nil || s.Holder != r.l.ID() || s.Metadata != waiterMeta {
		t.Fatalf("State after the hand-off: %+v (%v), want held by %q with metadata %q", s, err, r.l.ID(), waiterMeta)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
	e.expectFreed(t, ctx, fairKey(n, ""))
}

// testRWMetadata: an RWMutex writer's and readers' metadata, and the
// write lock's hand-off to a waiting writer with metadata of its own.
func testRWMetadata(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	rw := e.client(t).RWMutex(n, core.WithMetadata(holderMeta))
	r1 := mustLock(t, ctx, rw.TryRLock)
	r2 := mustLock(t, ctx, e.client(t).RWMutex(n, core.WithMetadata(waiterMeta)).TryRLock)
	expectMetadata(t, "TryRLock", r1, holderMeta)
	s, err := rw.State(ctx)
	if err != nil || len(s.Readers) != 2 {
		t.Fatalf("State with two readers: %+v (%v)", s, err)
	}
	for _, rd := range s.Readers {
		if want := map[string]string{r1.ID(): holderMeta, r2.ID(): waiterMeta}[rd.ID]; rd.Metadata != want || want == "" {
			t.Fatalf("State: reader %+v, want one of %q, %q with its metadata", rd, r1.ID(), r2.ID())
		}
	}
	for _, r := range []*core.Lease{r1, r2} {
		if err := r.Unlock(ctx); err != nil {
			t.Fatalf("a reader's Unlock: %v", err)
		}
	}
	w := mustLock(t, ctx, rw.TryLock)
	expectMetadata(t, "TryLock", w, holderMeta)
	if err := w.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if s, err := rw.State(ctx); err != nil || s.Writer != w.ID() || s.Metadata != holderMeta {
		t.Fatalf("State with a writer: %+v (%v), want %q with metadata %q", s, err, w.ID(), holderMeta)
	}
	got := e.inLine(t, ctx, rwKey(n, ":wq"), 1, e.client(t).RWMutex(n, core.WithMetadata(waiterMeta)).Lock)
	if err := w.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiting writer's Lock: %v", r.err)
	}
	expectMetadata(t, "the waiting writer's Lock", r.l, waiterMeta)
	if s, err := rw.State(ctx); err != nil || s.Writer != r.l.ID() || s.Metadata != waiterMeta {
		t.Fatalf("State after the hand-off: %+v (%v), want %q with metadata %q", s, err, r.l.ID(), waiterMeta)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatalf("the waiting writer's Unlock: %v", err)
	}
	e.expectFreed(t, ctx, rwKey(n, ":w"), rwKey(n, ":r"))
}

// testSemaphoreMetadata: a Semaphore lease's metadata in State, and its
// permit ID, which carries it, for Extend, Release and ForceRelease by
// holder.
func testSemaphoreMetadata(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	s := e.client(t).Semaphore(n, 3, core.WithMetadata(holderMeta))
	a := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return s.TryAcquire(ctx, 2) })
	b := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) {
		return e.client(t).Semaphore(n, 3, core.WithMetadata(waiterMeta)).TryAcquire(ctx, 1)
	})
	expectMetadata(t, "TryAcquire", a, holderMeta)
	if err := s.Extend(ctx, a.ID(), 5*time.Second); err != nil {
		t.Fatalf("Extend by permit ID: %v", err)
	}
	st, err := s.State(ctx)
	if err != nil || len(st.Leases) != 2 {
		t.Fatalf("State with two leases: %+v (%v)", st, err)
	}
	for _, l := range st.Leases {
		want := map[int]string{2: holderMeta, 1: waiterMeta}[len(l.Permits)]
		if l.Metadata != want || core.MetadataOf(l.Holder) != want {
			t.Fatalf("State: lease %+v, want metadata %q", l, want)
		}
		if want == waiterMeta {
			if err := s.ForceRelease(ctx, l.Holder); err != nil {
				t.Fatalf("ForceRelease(%q): %v", l.Holder, err)
			}
		}
	}
	if err := s.Release(ctx, a.ID()); err != nil {
		t.Fatalf("Release by permit ID: %v", err)
	}
	if err := b.Extend(ctx, time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("the force-released lease's Extend: %v, want ErrLost", err)
	}
	if st, err := s.State(ctx); err != nil || st.InUse != 0 || len(st.Leases) != 0 {
		t.Fatalf("State after the releases: %+v (%v), want no permit in use", st, err)
	}
}

// testMetadataRefused: metadata over core.MaxMetadata bytes, or that is not
// one line of UTF-8 text, is ErrInvalid, and the attempt writes nothing.
func testMetadataRefused(prim string) func(*testing.T, env) {
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		c := e.client(t)
		calls := func(m string) (leaseCalls, []string) {
			o := core.WithMetadata(m)
			switch prim {
			case "FairMutex":
				f := c.FairMutex(n, o)
				return leaseCalls{"TryLock": f.TryLock, "Lock": f.Lock}, []string{fairKey(n, ""), fenceKey(n), fairKey(n, ":q"), fairKey(n, ":t")}
			case "RWMutex":
				rw := c.RWMutex(n, o)
				return leaseCalls{"TryLock": rw.TryLock, "Lock": rw.Lock, "TryRLock": rw.TryRLock, "RLock": rw.RLock},
					[]string{rwKey(n, ":w"), rwKey(n, ":r"), rwKey(n, ":wq"), rwKey(n, ":rq"), rwKey(n, ":t"), fenceKey(n)}
			case "Semaphore":
				s := c.Semaphore(n, 2, o)
				return leaseCalls{
					"TryAcquire": func(ctx context.Context) (*core.Lease, error) { return s.TryAcquire(ctx, 1) },
					"Acquire":    func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, 1) },
				}, semKeys(n)
			}
			m2 := c.Mutex(n, o)
			return leaseCalls{"TryLock": m2.TryLock, "Lock": m2.Lock, "ForceLock": m2.ForceLock}, []string{lockKey(n), fenceKey(n), queueKey(n), ticketsKey(lockKey(n))}
		}
		var keys []string
		for _, bad := range []struct{ what, m, says string }{
			{"metadata over MaxMetadata", strings.Repeat("x", core.MaxMetadata+1), "over"},
			{"metadata with a newline", "host-7\npid 42", "control character"},
			{"metadata that is not UTF-8", "host-7 \xff", "UTF-8"},
		} {
			var cs leaseCalls
			cs, keys = calls(bad.m)
			expectInvalid(t, ctx, bad.what, bad.says, cs)
		}
		for i := range e.addrs {
			if k, err := e.admin(t, i).Exists(ctx, keys...).Result(); err != nil || k != 0 {
				t.Fatalf("refused metadata wrote %d of %v on node %d (%v)", k, keys, i, err)
			}
		}
		cs, _ := calls(strings.Repeat("é", core.MaxMetadata/2))
		for op, call := range cs {
			if op != "TryLock" && op != "TryAcquire" {
				continue
			}
			l, err := call(ctx)
			if err != nil {
				t.Fatalf("%s with metadata of MaxMetadata bytes: %v", op, err)
			}
			expectMetadata(t, op, l, strings.Repeat("é", core.MaxMetadata/2))
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("%s's lease's Unlock: %v", op, err)
			}
		}
	}
}
