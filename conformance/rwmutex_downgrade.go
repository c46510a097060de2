package conformance

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// downgradeCases are the cases of Lease.Downgrade: Poll's, where the wait
// strategy plays no part; the wake-up of waiting readers under Notify.
func downgradeCases(e env) map[string]func(*testing.T, env) {
	if e.strategy == core.Notify {
		return map[string]func(*testing.T, env){"DowngradeWakesReaders": testRWDowngradeWakesReaders}
	}
	return map[string]func(*testing.T, env){
		"Downgrade":                testRWDowngrade,
		"DowngradeKeepsWritersOut": testRWDowngradeKeepsWritersOut,
		"DowngradeLost":            testRWDowngradeLost,
	}
}

// testRWDowngrade turns a write lease into a read lease with its ID and
// token, which Extend, TTL, Valid and Unlock take as a read lease's; the
// write lease ends as after Unlock. Another reader gets in beside it, a
// writer not until it is released. Only an RWMutex's write lease, held,
// downgrades.
func testRWDowngrade(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	const ttl = 10 * time.Second
	m, other := e.client(t, core.WithTTL(ttl)).RWMutex(n), e.client(t).RWMutex(n)
	w := mustLock(t, ctx, m.Lock) // a waiting call's holder stays in the writers' line until it leaves
	r, err := w.Downgrade(ctx)
	if err != nil {
		t.Fatalf("Downgrade of a write lease: %v", err)
	}
	if r.ID() != w.ID() || r.Token() != w.Token() {
		t.Fatalf("the read lease has ID %q and token %d, want the write lease's %q and %d", r.ID(), r.Token(), w.ID(), w.Token())
	}
	select {
	case <-w.Done():
	default:
		t.Fatal("the write lease's Done is open after Downgrade")
	}
	if err := w.Err(); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("the write lease's Err after Downgrade: %v, want ErrNotHeld", err)
	}
	if _, err := w.Downgrade(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("a second Downgrade: %v, want ErrNotHeld", err)
	}
	if _, err := other.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock beside the downgraded lease: %v, want ErrNotAcquired", err)
	}
	r2, err := other.TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock beside the downgraded lease: %v", err)
	}
	if err := r2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := other.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock once the other reader left: %v, want ErrNotAcquired", err)
	}
	if err := r.Extend(ctx, ttl); err != nil {
		t.Fatalf("Extend of the read lease: %v", err)
	}
	if left, err := r.TTL(ctx); err != nil || left <= ttl-2*time.Second {
		t.Fatalf("TTL of the read lease: %v, %v; want about %v", left, err, ttl)
	}
	if s, err := m.State(ctx); err != nil || s.Writer != "" || len(s.Readers) != 1 || s.Readers[0].ID != r.ID() {
		t.Fatalf("State of the downgraded lock: %+v, %v; want the read lease alone", s, err)
	}
	if _, err := r.Downgrade(ctx); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Downgrade of a read lease: %v, want ErrInvalid", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the read lease: %v", err)
	}
	l := mustLock(t, ctx, other.TryLock)
	if l.Token() < r.Token() {
		t.Errorf("the next writer's token %d is below the downgraded lease's %d", l.Token(), r.Token())
	}
	l.Unlock(ctx)

	ml := mustLock(t, ctx, e.client(t).Mutex(n).TryLock)
	defer ml.Unlock(ctx)
	if _, err := ml.Downgrade(ctx); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Downgrade of a Mutex's lease: %v, want ErrInvalid", err)
	}
	if err := ml.Err(); err != nil {
		t.Fatalf("the Mutex's lease after a refused Downgrade: %v", err)
	}
}

// testRWDowngradeKeepsWritersOut: a writer waiting behind the write lease
// still waits once it is downgraded, and gets the lock when the read
// lease is released; a release and an RLock would have let it in between.
func testRWDowngradeKeepsWritersOut(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	w := mustLock(t, ctx, e.client(t).RWMutex(n).TryLock)
	writer := e.inLine(t, ctx, rwKey(n, ":wq"), 1, e.client(t, patient).RWMutex(n).Lock)
	r, err := w.Downgrade(ctx)
	if err != nil {
		t.Fatalf("Downgrade: %v", err)
	}
	select {
	case got := <-writer:
		t.Fatalf("the waiting writer acquired (err %v) while the downgraded lease held", got.err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-writer
	if got.err != nil {
		t.Fatalf("the waiting writer's Lock once the read lease left: %v", got.err)
	}
	got.l.Unlock(ctx)
}

// testRWDowngradeWakesReaders: a Downgrade wakes the waiting readers, as
// a writer's release does.
func testRWDowngradeWakesReaders(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	w := mustLock(t, ctx, e.client(t).RWMutex(n).TryLock)
	reader := e.inLine(t, ctx, rwKey(n, ":rq"), 1, e.client(t, patient).RWMutex(n).RLock)
	e.awaitWatching(t, ctx, rwKey(n, ":rq"))
	start := time.Now()
	r, err := w.Downgrade(ctx)
	if err != nil {
		t.Fatalf("Downgrade: %v", err)
	}
	defer r.Unlock(ctx)
	expectWoken(t, reader, start).Unlock(ctx)
}

// testRWDowngradeLost: the Downgrade of a write lease whose lock another
// writer took on every node returns ErrLost, ends the lease so, and
// writes nothing: the other writer keeps the lock, and no read lease or
// key appears.
func testRWDowngradeLost(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	w := mustLock(t, ctx, e.client(t).RWMutex(n).TryLock)
	keys := func() [][]string {
		var all [][]string
		for i := range e.addrs {
			k, err := e.admin(t, i).Keys(ctx, lockKey(n)+"*").Result()
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(k)
			all = append(all, k)
		}
		return all
	}
	for i := range e.addrs {
		if err := e.admin(t, i).Set(ctx, rwKey(n, ":w"), "another", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
	}
	before := keys()
	if r, err := w.Downgrade(ctx); r != nil || !errors.Is(err, core.ErrLost) {
		t.Fatalf("Downgrade of a lost lease: %v, %v; want nil, ErrLost", r, err)
	}
	if err := w.Err(); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Err after the Downgrade of a lost lease: %v, want ErrLost", err)
	}
	if after := keys(); !slices.EqualFunc(before, after, slices.Equal) {
		t.Fatalf("the Downgrade of a lost lease changed the keys from %v to %v", before, after)
	}
	for i := range e.addrs {
		if v, err := e.admin(t, i).Get(ctx, rwKey(n, ":w")).Result(); err != nil || v != "another" {
			t.Fatalf("node %d's write lock after the Downgrade of a lost lease: %q, %v; want the other writer's", i, v, err)
		}
	}
	for i := range e.addrs {
		e.admin(t, i).Del(context.Background(), rwKey(n, ":w"))
	}
}
