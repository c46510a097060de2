package conformance

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// landsLate is one way an attempt held back on the network (it fails at
// once, as a timeout) lands after the call it belonged to is over: after
// its own undo, after its lease's release, or after its Lock gave up.
// Every one must be refused where it lands, as the undo, release or leave
// marked it (see the package documentation of core), not hold the name
// there for the waiter's TTL, a phantom hold nobody would release.
//
// A plain Mutex attempt without a line of its own (a TryLock's, or any
// under Poll) is the exception: it takes a free name with one SET and
// reads no mark, so that the uncontended path costs no command for it.
// Landing late on a free name, it holds it as a phantom; such a case
// checks what remains (see phantomWithinTTL).
type landsLate struct {
	onMajority bool          // held back on a majority of nodes, else on the last one
	duplicated bool          // the attempt also runs at once: only a copy of it is held back
	retried    bool          // the attempt runs twice at once, as a client that lost its reply sends it again; nothing is held back
	joining    bool          // the first attempt that joins the line (see testLateAttemptAfterGiveUp), else the first
	holderTTL  time.Duration // a holder's, taken first; 0 for none
	waiterTTL  time.Duration // the waiter's; 0 for 30s
	goneWithin time.Duration // how soon the name must be free after the landing; 0 for 3s
	// only, when not nil, are the primitives it runs for, on 3 nodes (a
	// case of many seconds that checks what they alone do)
	only []string
	// call is the waiter's part, with w, whose attempt is held back; it
	// ends the holder's lease h when it should.
	call func(ctx context.Context, t *testing.T, x exclusiveLock, w *core.Client, n string, h *core.Lease)
}

var landsLateCases = map[string]landsLate{
	// The holder's lock expires; the waiter wins with a later attempt
	// under the same token on every node, and unlocks.
	"JoinLandsAfterUnlock": {joining: true, holderTTL: 1500 * time.Millisecond, call: lockUnlock},
	// No one holds the name: the waiter wins at once where its attempt
	// was not held back, and unlocks.
	"FirstLandsAfterUnlock": {call: lockUnlock},
	// The waiter wins at once and unlocks; a copy of its attempt, sent
	// twice (by a client that retried it on a broken connection), lands
	// after the release.
	"CopyLandsAfterUnlock": {duplicated: true, call: lockUnlock},
	// A TryLock wins at once and its lease is held, extended, past its
	// first TTL; a copy of its attempt, sent twice on a majority, lands
	// after the release: the mark the attempt made as it landed must last
	// as long as its lease.
	"CopyLandsAfterExtendedLease": {duplicated: true, onMajority: true, waiterTTL: 2 * time.Second, goneWithin: time.Second,
		// FairMutex and RWMutex mark on every release.
		only: []string{"Mutex", "MutexOwned", "MultiLock", "Semaphore"}, call: func(ctx context.Context, t *testing.T, x exclusiveLock, w *core.Client, n string, _ *core.Lease) {
			l, err := x.try(ctx, w, n)
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			for range 3 {
				time.Sleep(time.Second) // 3s in all: past the first TTL, and the mark's
				if err := l.Extend(ctx, 2*time.Second); err != nil {
					t.Fatalf("Extend: %v", err)
				}
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
		}},
	// The waiter's attempt runs twice on a majority of nodes before its
	// reply comes back (the reply of the second): the lease must hold what
	// the first took there, once, and its release free it.
	"RetriedAttempt": {retried: true, onMajority: true, call: func(ctx context.Context, t *testing.T, x exclusiveLock, w *core.Client, n string, h *core.Lease) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second) // a phantom hold lasts the TTL, 30s
		defer cancel()
		lockUnlock(ctx, t, x, w, n, h)
	}},
	// A TryLock refused by the holder, whose attempt was sent twice; the
	// holder unlocks before the copy lands.
	"RefusedCopyLandsLate": {duplicated: true, holderTTL: 10 * time.Second, call: func(ctx context.Context, t *testing.T, x exclusiveLock, w *core.Client, n string, h *core.Lease) {
		if _, err := x.try(ctx, w, n); err == nil {
			t.Fatalf("the TryLock won while the name is held")
		}
		unlockHolder(ctx, t, h)
	}},
	// A TryLock refused by the holder is undone, and the holder unlocks.
	"TryUndoLandsLate": {holderTTL: 10 * time.Second, call: func(ctx context.Context, t *testing.T, x exclusiveLock, w *core.Client, n string, h *core.Lease) {
		if _, err := x.try(ctx, w, n); err == nil {
			t.Fatalf("the TryLock won while the name is held")
		}
		unlockHolder(ctx, t, h)
	}},
	// A Lock whose first attempt is held back on a majority waits that
	// out, is refused by the holder and gives up at its context's end;
	// the holder unlocks.
	"FirstLandsAfterGiveUp": {onMajority: true, holderTTL: 10 * time.Second, call: func(ctx context.Context, t *testing.T, x exclusiveLock, w *core.Client, n string, h *core.Lease) {
		wait, cancel := cancelledAfter(ctx, time.Second)
		defer cancel()
		if _, err := x.lock(wait, w, n); !errors.Is(err, context.Canceled) || errors.Is(err, core.ErrNoQuorum) {
			t.Fatalf("Lock with its first attempt held back on a majority, refused after: got %v, want context.Canceled alone", err)
		}
		unlockHolder(ctx, t, h)
	}},
}

func lockUnlock(ctx context.Context, t *testing.T, x exclusiveLock, w *core.Client, n string, _ *core.Lease) {
	l, err := x.lock(ctx, w, n)
	if err != nil {
		t.Fatalf("waiter: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("waiter's Unlock: %v", err)
	}
}

// unlockHolder unlocks the holder's lease once the waiter's undos and
// leaves, which run in the background, had time to land (Close would land
// the held-back calls too).
func unlockHolder(ctx context.Context, t *testing.T, h *core.Lease) {
	time.Sleep(300 * time.Millisecond)
	if err := h.Unlock(ctx); err != nil {
		t.Fatalf("holder's Unlock: %v", err)
	}
}

// landsLateCasesFor are the landsLate cases of the exclusive primitive p
// ("RWMutexRead" for a read lease), named with prefix.
func landsLateCasesFor(e env, p, prefix string) map[string]func(*testing.T, env) {
	cases := map[string]func(*testing.T, env){}
	for name, c := range landsLateCases {
		if c.only == nil || len(e.addrs) == 3 && slices.Contains(c.only, p) {
			cases[prefix+name] = c.test(p)
		}
	}
	return cases
}

// firstJoin tells, on each node, the first acquisition call that joins
// a line: one that names a waiter's ticket (see ticketParts) among its
// keys. A Client joins only once its channel is subscribed on every node,
// so which attempt that is depends on how soon the last node confirmed.
type firstJoin struct {
	mu sync.Mutex
	n  map[int]int // node → that call's N
}

// is reports whether call is the first that joins on its node.
func (f *firstJoin) is(call faults.Call) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if n, ok := f.n[call.Node]; ok {
		return n == call.N
	}
	if !slices.ContainsFunc(call.Tickets, func(k string) bool { _, _, ok := ticketParts(k); return ok }) {
		return false
	}
	if f.n == nil {
		f.n = map[int]int{}
	}
	f.n[call.Node] = call.N
	return true
}

// phantom reports whether the attempt held back is a plain Mutex
// attempt without a line of its own, which no mark refuses on a free name.
func (c landsLate) phantom(p string, e env) bool {
	return p == "Mutex" && !c.retried && (e.strategy == core.Poll || !c.joining)
}

func (c landsLate) test(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 40*time.Second), name(t)
		ttl := cmp.Or(c.waiterTTL, 30*time.Second)
		phantom := c.phantom(p, e)
		if phantom {
			ttl = min(ttl, 2*time.Second) // the phantom's hold, waited out
		}
		target := func(call faults.Call) bool { return call.N == 1 }
		if c.joining && x.late && e.strategy == core.Notify {
			target = (&firstJoin{}).is // its first attempts take no place in line
		}
		heldBack := func(node int) bool { return node == len(e.addrs)-1 }
		if c.onMajority {
			heldBack = func(node int) bool { return node <= len(e.addrs)/2 }
		}
		var hit atomic.Int32
		w, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if heldBack(call.Node) && call.Op == x.acquire && target(call) {
				hit.Add(1)
				switch {
				case c.retried:
					return faults.Fault{Kind: faults.Retry}
				case c.duplicated:
					return faults.Fault{Kind: faults.Duplicate, After: time.Hour}
				}
				return later
			}
			return faults.Fault{}
		}, core.WithTTL(ttl))
		var h *core.Lease
		if c.holderTTL > 0 {
			holder := x.holder
			if holder == nil {
				holder = x.lock
			}
			var err error
			if h, err = holder(ctx, e.client(t, core.WithTTL(c.holderTTL)), n); err != nil {
				t.Fatalf("holder: %v", err)
			}
		}
		c.call(ctx, t, x, w, n, h)
		if hit.Load() == 0 {
			t.Fatal("no attempt was held back")
		}
		time.Sleep(300 * time.Millisecond) // the waiter's background leaves and retries ran
		if phantom {
			phantomWithinTTL(t, e, ctx, n, ttl, func() { flush(fds) })
			return
		}
		flush(fds) // the held-back attempts land now
		e.gone(t, ctx, cmp.Or(c.goneWithin, 3*time.Second), x.key(n))
	}
}

// phantomWithinTTL checks what remains when land lands a plain Mutex's
// attempts late, after every lease of name n ended: where one takes the
// free name, it holds it for at most its TTL, ttl, under a token no lease
// has (the name frees by then, as nobody releases it), and a lease granted
// after it draws a larger token than any lease before it.
func phantomWithinTTL(t *testing.T, e env, ctx context.Context, n string, ttl time.Duration, land func()) {
	t.Helper()
	// A lease's token is at most the counter of a majority of nodes (the
	// round raises theirs to it), so at most the quorum-th largest; a
	// later lease draws above it on a node of that majority.
	counters := make([]int64, len(e.addrs))
	for i := range e.addrs {
		counters[i], _ = e.admin(t, i).Get(ctx, fenceKey(n)).Int64()
	}
	slices.Sort(counters)
	drawn := counters[len(counters)-(len(counters)/2+1)] // no lease before drew more
	land()
	for i := range e.addrs {
		if pttl := e.admin(t, i).PTTL(ctx, lockKey(n)).Val(); pttl > ttl {
			t.Fatalf("node %d: the attempt that landed late holds the name for %v, more than its TTL %v", i, pttl, ttl)
		}
	}
	e.gone(t, ctx, ttl+time.Second, lockKey(n))
	l, err := e.client(t).Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock once the late attempt's hold ended: %v", err)
	}
	defer l.Unlock(ctx)
	if l.Token() <= uint64(drawn) {
		t.Fatalf("the lease after the late attempt has token %d, not above %d, drawn before it", l.Token(), drawn)
	}
}

// testReleaseByIDMarksForLeaseTTL: a Semaphore lease (TTL 30s) wins on
// every node but the last, where its attempt is held back. Another Client
// releases it by permit ID through a Semaphore whose TTL is 1s: its
// release finds nothing on the last node and marks the attempt there, for
// the lease's TTL, which the ID carries, not the releasing Semaphore's.
// The attempt lands 1.5s later, after a 1s mark would have gone: it must
// be refused, not take the permit for 30s.
func testReleaseByIDMarksForLeaseTTL(t *testing.T, e env) {
	ctx, n := ctxFor(t, 40*time.Second), name(t)
	w, fds := e.firstHeldBack(t, "SemaphoreAcquire", core.WithTTL(30*time.Second))
	l, err := w.Semaphore(n, 1).Acquire(ctx, 1)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	other := e.client(t).Semaphore(n, 1, core.WithTTL(time.Second))
	if err := other.Release(ctx, l.ID()); err != nil {
		t.Fatalf("Release by ID: %v", err)
	}
	time.Sleep(1500 * time.Millisecond) // still well within the attempt's 30s TTL
	flush(fds)
	e.gone(t, ctx, 3*time.Second, semKey(n, "")) // a phantom hold lasts 30s
}
