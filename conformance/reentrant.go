package conformance

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// reentrant is a lock with a line that is reentrant for an owner
// (core.WithOwner), as the reentrant-lock cases use it.
type reentrantLock struct {
	name string // the primitive's, as exclusiveLocks has it
	// try and lock are TryLock and Lock of the lock called n as owner ("":
	// none).
	try, lock func(ctx context.Context, c *core.Client, n, owner string, opts ...core.Option) (*core.Lease, error)
	key       func(n string) string // the lock key: the owner's hash while an owner holds it
	// state reads who holds n (the owner, for an owner's leases), how
	// many leases hold it, and how many others wait in its line.
	state func(ctx context.Context, c *core.Client, n string) (holder string, owned bool, holds, waiting int, err error)
}

var reentrants = map[string]reentrantLock{
	"FairMutex": {
		name: "FairMutex",
		try: func(ctx context.Context, c *core.Client, n, owner string, o ...core.Option) (*core.Lease, error) {
			return c.FairMutex(n, append(o, core.WithOwner(owner))...).TryLock(ctx)
		},
		lock: func(ctx context.Context, c *core.Client, n, owner string, o ...core.Option) (*core.Lease, error) {
			return c.FairMutex(n, append(o, core.WithOwner(owner))...).Lock(ctx)
		},
		key: func(n string) string { return fairKey(n, "") },
		state: func(ctx context.Context, c *core.Client, n string) (string, bool, int, int, error) {
			s, err := c.FairMutex(n).State(ctx)
			return s.Holder, s.Owned, s.Holds, s.Waiting, err
		},
	},
	// Its write lock.
	"RWMutex": {
		name: "RWMutex",
		try: func(ctx context.Context, c *core.Client, n, owner string, o ...core.Option) (*core.Lease, error) {
			return c.RWMutex(n, append(o, core.WithOwner(owner))...).TryLock(ctx)
		},
		lock: func(ctx context.Context, c *core.Client, n, owner string, o ...core.Option) (*core.Lease, error) {
			return c.RWMutex(n, append(o, core.WithOwner(owner))...).Lock(ctx)
		},
		key: func(n string) string { return rwKey(n, ":w") },
		state: func(ctx context.Context, c *core.Client, n string) (string, bool, int, int, error) {
			s, err := c.RWMutex(n).State(ctx)
			return s.Writer, s.Owned, s.Holds, s.WaitingWriters, err
		},
	},
}

// reentrantCases are the cases of primitive p's reentrant lock.
func reentrantCases(e env, p string) map[string]func(*testing.T, env) {
	x := reentrants[p]
	cases := map[string]func(*testing.T, env){
		"Reentrant":                     func(t *testing.T, e env) { testReentrantOf(t, e, x) },
		"ReentrantKeepsLine":            func(t *testing.T, e env) { testReentrantKeepsLine(t, e, x) },
		"ReentrantHostileWritesNothing": func(t *testing.T, e env) { testReentrantHostile(t, e, x) },
	}
	if e.strategy == core.Poll { // the watchdog's extensions; the wait strategy plays no part
		cases["ReentrantAutoExtend"] = func(t *testing.T, e env) { testReentrantAutoExtend(t, e, x) }
	}
	if p == "RWMutex" {
		cases["OwnerReadsWhileWriting"] = testOwnerReadsWhileWriting
	}
	if len(e.addrs) == 3 && !e.cluster {
		cases["ReentrantRetakesLostNode"] = func(t *testing.T, e env) { testReentrantRetakesLostNode(t, e, x) }
	}
	return cases
}

// loaded is a Client of e whose nodes have two seconds to answer, as a
// loaded machine may need (the lock's TTL is ten seconds, the default).
func loaded(t *testing.T, e env, opts ...core.Option) *core.Client {
	return e.client(t, append([]core.Option{core.WithNodeTimeout(2 * time.Second)}, opts...)...)
}

// wantHolds checks that n is held by owner with holds leases, and that
// waiting others wait.
func wantHolds(t *testing.T, ctx context.Context, x reentrantLock, c *core.Client, n, owner string, holds, waiting int) {
	t.Helper()
	holder, owned, got, w, err := x.state(ctx, c, n)
	if err != nil {
		t.Fatalf("State: %v", err)
	}
	if holder != owner || owned != (owner != "") || got != holds || w != waiting {
		t.Fatalf("State: holder %q (owned %v) with %d leases, %d waiting; want %q with %d, %d waiting", holder, owned, got, w, owner, holds, waiting)
	}
}

// testReentrantOf takes the lock three times as one owner, from two
// Clients (processes of the owner), by TryLock and by Lock: each takes it
// at once with a larger fencing token, others are refused, each lease
// extends and releases alone, and the name is free only once the last
// lease released, in whatever order.
func testReentrantOf(t *testing.T, e env, x reentrantLock) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const owner = "worker-1"
	a, b := loaded(t, e, core.WithTTL(10*time.Second)), loaded(t, e, core.WithTTL(10*time.Second))
	l1 := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return x.try(ctx, a, n, owner) })
	// Lock re-enters at once, without waiting in line for the TTL.
	quick, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	l2, err := x.lock(quick, b, n, owner)
	if err != nil {
		t.Fatalf("Lock by the owner, from another Client, while it holds: %v", err)
	}
	l3, err := x.try(ctx, a, n, owner)
	if err != nil {
		t.Fatalf("TryLock by the owner while it holds: %v", err)
	}
	if !(l1.Token() < l2.Token() && l2.Token() < l3.Token()) {
		t.Fatalf("tokens %d, %d, %d: want each re-entry's larger", l1.Token(), l2.Token(), l3.Token())
	}
	for _, other := range []string{"worker-2", ""} {
		if l, err := x.try(ctx, loaded(t, e), n, other); !errors.Is(err, core.ErrNotAcquired) {
			if l != nil {
				l.Unlock(ctx)
			}
			t.Fatalf("TryLock by owner %q while %q holds: %v, want ErrNotAcquired", other, owner, err)
		}
	}
	wantHolds(t, ctx, x, a, n, owner, 3, 0)
	if err := l2.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the second lease: %v", err)
	}
	if err := l1.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend of the first lease with one released: %v", err)
	}
	if err := l2.Extend(ctx, 5*time.Second); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Extend of the released lease: %v, want ErrNotHeld", err)
	}
	wantHolds(t, ctx, x, a, n, owner, 2, 0)
	if err := l1.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the first lease: %v", err)
	}
	if l, err := x.try(ctx, loaded(t, e), n, ""); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("TryLock with one of the owner's leases left: %v, want ErrNotAcquired", err)
	}
	if ok, err := l3.Valid(ctx); !ok {
		t.Fatalf("the last lease is not valid after the others released: %v", err)
	}
	wantHolds(t, ctx, x, a, n, owner, 1, 0)
	if err := l3.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the last lease: %v", err)
	}
	wantHolds(t, ctx, x, a, n, "", 0, 0)
	l, err := x.try(ctx, loaded(t, e), n, "")
	if err != nil {
		t.Fatalf("TryLock once the owner's last lease released: %v", err)
	}
	l.Unlock(ctx)
}

// testReentrantKeepsLine hands the lock from a plain holder to an owner's
// waiter; with a plain waiter in line then, a second process of the owner
// takes it again at once, without queueing; the plain waiter gets it only
// once both of the owner's leases released, and the owner, holding
// nothing then, does not pass it.
func testReentrantKeepsLine(t *testing.T, e env, x reentrantLock) {
	ctx, n := ctxFor(t, 40*time.Second), name(t)
	const owner = "worker-1"
	const ttl = 10 * time.Second
	c := func() *core.Client { return loaded(t, e, core.WithTTL(ttl)) }
	reader := loaded(t, e) // for State
	first := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return x.try(ctx, c(), n, "") })
	waiting := func(want int) {
		t.Helper()
		if !eventually(5*time.Second, func() bool {
			_, _, _, w, err := x.state(ctx, reader, n)
			return err == nil && w >= want
		}) {
			t.Fatalf("fewer than %d waiters in line after 5s", want)
		}
	}
	type won struct {
		l   *core.Lease
		err error
	}
	wait := func(owner string) chan won {
		ch := make(chan won, 1)
		cl := c()
		go func() {
			l, err := x.lock(ctx, cl, n, owner)
			ch <- won{l, err}
		}()
		return ch
	}
	got := func(ch chan won, who string) *core.Lease {
		t.Helper()
		select {
		case w := <-ch:
			if w.err != nil {
				t.Fatalf("%s's Lock: %v", who, w.err)
			}
			return w.l
		case <-time.After(8 * time.Second):
			t.Fatalf("%s not granted the lock within 8s", who)
		}
		return nil
	}
	notYet := func(ch chan won, who, when string) {
		t.Helper()
		select {
		case w := <-ch:
			if w.l != nil {
				w.l.Unlock(ctx)
			}
			t.Fatalf("%s got the lock %s: %v", who, when, w.err)
		case <-time.After(500 * time.Millisecond):
		}
	}
	ownerCh := wait(owner)
	waiting(1)
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	o1 := got(ownerCh, "the owner's waiter")
	plainCh := wait("")
	waiting(1)
	o2, err := x.try(ctx, c(), n, owner)
	if err != nil {
		t.Fatalf("TryLock by the owner, holding the lock its waiter was granted, with another waiting: %v", err)
	}
	notYet(plainCh, "the plain waiter", "while the owner holds two leases")
	wantHolds(t, ctx, x, reader, n, owner, 2, 1)
	if err := o1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	notYet(plainCh, "the plain waiter", "while the owner holds one lease")
	if err := o2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	last := got(plainCh, "the plain waiter, once the owner's last lease released")
	if last.Token() <= o2.Token() {
		t.Fatalf("the plain waiter's token %d is not above the owner's %d", last.Token(), o2.Token())
	}
	if l, err := x.try(ctx, c(), n, owner); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("TryLock by the owner, holding nothing, while another holds: %v, want ErrNotAcquired", err)
	}
	last.Unlock(ctx)
}

// testReentrantHostile lets an owner hold the lock, then breaks the name's
// tickets key, or its fencing counter, on every node: the owner's attempt
// to take it again is refused and writes nothing, its leases' hash
// included (the undo of the refused attempt held back); once repaired,
// it takes it again.
func testReentrantHostile(t *testing.T, e env, x reentrantLock) {
	ctx := ctxFor(t, 20*time.Second)
	const owner = "worker-1"
	var noUndo atomic.Bool
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if noUndo.Load() && !strings.Contains(call.Op, "Acquire") {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithNodeTimeout(2*time.Second))
	// A name of its own for each: the undo held back is retried later.
	for _, breaks := range []struct {
		what string
		key  func(n string) string
	}{{"tickets", lineTickets(x.name)}, {"fencing counter", fenceKey}} {
		n := name(t)
		held := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) {
			return x.try(ctx, e.hostileClient(t), n, owner, core.WithTTL(10*time.Second))
		})
		leases := func() []map[string]string {
			var all []map[string]string
			e.everyNode(t, func(r redis.UniversalClient) error {
				h, err := r.HGetAll(ctx, x.key(n)).Result()
				all = append(all, h)
				return err
			})
			return all
		}
		key := breaks.key(n)
		e.everyNode(t, func(r redis.UniversalClient) error { return r.Set(ctx, key, "x", time.Minute).Err() })
		before, hashes := e.nameState(t, ctx, n), leases()
		noUndo.Store(true)
		l, err := x.try(ctx, c, n, owner)
		switch {
		case err == nil:
			l.Unlock(ctx)
			t.Fatalf("re-entry over a broken %s acquired", breaks.what)
		case !errors.Is(err, core.ErrServerError) || key == fenceKey(n) && !strings.Contains(err.Error(), key):
			t.Fatalf("re-entry over a broken %s: %v; want ErrServerError (naming the counter)", breaks.what, err)
		}
		if after := e.nameState(t, ctx, n); !maps.Equal(before, after) {
			t.Fatalf("re-entry over a broken %s, refused, wrote: the nodes held %v, now %v", breaks.what, before, after)
		}
		for i, h := range leases() {
			if !maps.Equal(h, hashes[i]) {
				t.Fatalf("re-entry over a broken %s, refused, wrote the leases %v on node %d, which held %v", breaks.what, h, i, hashes[i])
			}
		}
		noUndo.Store(false)
		e.everyNode(t, func(r redis.UniversalClient) error { return r.Del(ctx, key).Err() })
		// Repaired (a counter deleted starts afresh, see lib/fence.lua).
		again, err := x.try(ctx, c, n, owner)
		if err != nil {
			t.Fatalf("re-entry once the %s was repaired: %v", breaks.what, err)
		}
		again.Unlock(ctx)
		held.Unlock(ctx)
	}
}

// testReentrantRetakesLostNode: an owner holds the lock on three nodes,
// and one loses the key (an expiry, a restart without persistence). The
// owner's re-entry holds it again on the three: on the two where its
// lease holds, as a second lease; on the one that lost it, as the only
// one, taking the free lock there. Releasing the two leases frees the name
// everywhere.
func testReentrantRetakesLostNode(t *testing.T, e env, x reentrantLock) {
	ctx := ctxFor(t, 30*time.Second)
	const owner = "worker-1"
	c := loaded(t, e, core.WithTTL(10*time.Second))
	var n string
	var l1 *core.Lease
	inTries(t, 5, "the first lease missed a node every time", func(int) bool {
		n = name(t)
		l1 = mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return x.try(ctx, c, n, owner) })
		return e.onNodes(t, ctx, x.key(n)) == 3 // else a call timed out on a loaded machine
	})
	if err := e.admin(t, 0).Del(ctx, x.key(n)).Err(); err != nil {
		t.Fatal(err)
	}
	l2, err := x.try(ctx, c, n, owner)
	if err != nil {
		t.Fatalf("re-entry with one node lost: %v", err)
	}
	// TryLock returns once a majority holds; the last node's answer may
	// land a moment later on a loaded machine.
	var counts []int64
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		counts = make([]int64, 3)
		for i := range 3 {
			fields, err := e.admin(t, i).HKeys(ctx, x.key(n)).Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				if strings.HasPrefix(f, "l:") {
					counts[i]++
				}
			}
		}
		if counts[0] == 1 && counts[1] == 2 && counts[2] == 2 || time.Now().After(deadline) {
			break
		}
	}
	if counts[0] != 1 || counts[1] != 2 || counts[2] != 2 {
		t.Fatalf("leases per node %v 2s after the re-entry, want [1 2 2]", counts)
	}
	if err := l1.Unlock(ctx); err != nil {
		t.Fatalf("Unlock of the first lease, missing on one node: %v", err)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if on := e.onNodesAfter(t, ctx, x.key(n)); on != 0 {
		t.Fatalf("the lock is on %d nodes after both leases released", on)
	}
}

// testOwnerReadsWhileWriting: an owner holding the write lock, with a
// writer waiting, takes a read lease at once (others' are refused); the
// write lock's release leaves it holding, so the waiting writer gets the
// lock only once the owner's read lease released too. An owner holding
// only a read lease does not upgrade: its TryLock is refused.
func testOwnerReadsWhileWriting(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	const owner = "worker-1"
	c := loaded(t, e, core.WithTTL(10*time.Second))
	m := c.RWMutex(n, core.WithOwner(owner))
	w := mustLock(t, ctx, m.TryLock)
	waiter := make(chan *core.Lease, 1)
	waiterErr := make(chan error, 1)
	wc := loaded(t, e, core.WithTTL(10*time.Second))
	go func() {
		l, err := wc.RWMutex(n).Lock(ctx)
		waiter <- l
		waiterErr <- err
	}()
	if !eventually(5*time.Second, func() bool {
		s, err := c.RWMutex(n).State(ctx)
		return err == nil && s.WaitingWriters >= 1
	}) {
		t.Fatal("the writer did not wait in line within 5s")
	}
	if l, err := loaded(t, e).RWMutex(n).TryRLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("TryRLock of another while the owner writes: %v, want ErrNotAcquired", err)
	}
	r, err := loaded(t, e).RWMutex(n, core.WithOwner(owner)).TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock of the owner while it writes, a writer waiting: %v", err)
	}
	if r.Token() <= w.Token() {
		t.Fatalf("the owner's read token %d is not above its write token %d", r.Token(), w.Token())
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-waiter:
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("the waiting writer got the lock while the owner's read lease holds: %v", <-waiterErr)
	case <-time.After(500 * time.Millisecond):
	}
	if l, err := m.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("TryLock of the owner holding only a read lease: %v, want ErrNotAcquired (no upgrade)", err)
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-waiter:
		if err := <-waiterErr; err != nil {
			t.Fatalf("the waiting writer: %v", err)
		}
		l.Unlock(ctx)
	case <-time.After(8 * time.Second):
		t.Fatal("the waiting writer not granted within 8s of the owner's last lease's release")
	}
}

// testReentrantAutoExtend: the watchdog keeps each of an owner's leases,
// past the end of its TTL; once one is unlocked, the other still holds the name
// for the owner alone, and its Unlock frees it. The TTL is long enough
// that an extension slowed by a loaded machine (a Cluster's replicas
// acknowledging) does not outlast the validity left.
func testReentrantAutoExtend(t *testing.T, e env, x reentrantLock) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	const owner = "worker-1"
	const ttl = 3 * time.Second
	take := func(ctx context.Context) (*core.Lease, error) {
		return x.try(ctx, loaded(t, e), n, owner, core.WithTTL(ttl), core.WithAutoExtend())
	}
	l1, l2 := mustLock(t, ctx, take), mustLock(t, ctx, take)
	// Half a TTL past the end an unextended lease would have had.
	const past = ttl + ttl/2
	time.Sleep(past)
	for i, l := range []*core.Lease{l1, l2} {
		if err := l.Err(); err != nil {
			t.Fatalf("auto-extended lease %d after %v, its TTL %v: %v", i+1, past, ttl, err)
		}
	}
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(past)
	if err := l2.Err(); err != nil {
		t.Fatalf("the owner's other lease, %v after the first's Unlock, its TTL %v: %v", past, ttl, err)
	}
	if l, err := x.try(ctx, loaded(t, e), n, ""); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("TryLock while the owner's other lease holds: %v, want ErrNotAcquired", err)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := x.try(ctx, loaded(t, e), n, "")
	if err != nil {
		t.Fatalf("TryLock once both leases were unlocked: %v", err)
	}
	l.Unlock(ctx)
}
