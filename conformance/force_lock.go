package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testForceLockTakesOver has an operator take a held Mutex over while a
// waiter waits in line: ForceLock returns a lease with a higher token at
// once, the former holder's Extend is ErrLost saying it was
// force-released, the waiter waits on (a TryLock finds the name taken),
// and the operator's Unlock hands the name on to the waiter, with a
// higher token still.
func testForceLockTakesOver(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t, unhurried, core.WithTTL(10*time.Second)).Mutex(n).Lock)
	got := e.inLine(t, ctx, queueKey(n), 1, e.client(t, unhurried, core.WithTTL(time.Minute)).Mutex(n).Lock)
	taken, err := e.client(t, unhurried).Mutex(n, core.WithTTL(10*time.Second)).ForceLock(ctx)
	if err != nil {
		t.Fatalf("ForceLock of a held name: %v", err)
	}
	if taken.Token() <= held.Token() {
		t.Fatalf("ForceLock's token %d after the holder's %d: not increasing", taken.Token(), held.Token())
	}
	if err := held.Extend(ctx, 10*time.Second); !errors.Is(err, core.ErrLost) || !strings.Contains(err.Error(), "force") {
		t.Fatalf("the former holder's Extend: %v; want ErrLost saying it was force-released", err)
	}
	if l, err := e.client(t, unhurried).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("TryLock after ForceLock: %v, want ErrNotAcquired", err)
	}
	select {
	case r := <-got:
		t.Fatalf("the waiter returned while ForceLock's lease held the name: %v", r.err)
	default:
	}
	released := time.Now()
	unlockOnce(t, ctx, taken)
	w := expectWoken(t, got, released)
	if w.Token() <= taken.Token() {
		t.Fatalf("the waiter's token %d after ForceLock's %d: not increasing", w.Token(), taken.Token())
	}
	unlockOnce(t, ctx, w)
}

// forceLockCopied is a Client whose first ForceLock request on every
// node also runs again at flush, as a copy sent twice.
func (e env) forceLockCopied(t *testing.T) (*core.Client, []*faults.Driver) {
	return e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Op == "MutexForceLock" && c.N == 1 {
			return faults.Fault{Kind: faults.Duplicate, After: time.Hour}
		}
		return faults.Fault{}
	}, unhurried)
}

// testForceLockCopyRefused: ForceLock's request, sent twice on every
// node, lands once; its lease is released and another takes the name;
// then the copies land. They must take nothing: a copy that forced the
// name again would end the later, innocent holder's lease.
func testForceLockCopyRefused(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	w, fds := e.forceLockCopied(t)
	defer flush(fds)
	taken, err := w.Mutex(n, core.WithTTL(10*time.Second)).ForceLock(ctx)
	if err != nil {
		t.Fatalf("ForceLock of a free name: %v", err)
	}
	unlockOnce(t, ctx, taken)
	later := mustLock(t, ctx, e.client(t, unhurried).Mutex(n, core.WithTTL(10*time.Second)).TryLock)
	flush(fds) // the copies land
	if err := later.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("the later holder's Extend once copies of an earlier ForceLock landed: %v, want nil", err)
	}
	unlockOnce(t, ctx, later)
}

// testForceLockLateCopyRefused: as testForceLockCopyRefused, but the
// copies land later than ForceLock's TTL after the request: a copy that
// arrives late is late by however long the network or a paused server
// held it, and must still take nothing from the later holder.
func testForceLockLateCopyRefused(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = 1500 * time.Millisecond
	w, fds := e.forceLockCopied(t)
	defer flush(fds)
	taken, err := w.Mutex(n, core.WithTTL(ttl)).ForceLock(ctx)
	if err != nil {
		t.Fatalf("ForceLock of a free name: %v", err)
	}
	unlockOnce(t, ctx, taken)
	later := mustLock(t, ctx, e.client(t, unhurried).Mutex(n, core.WithTTL(10*time.Second)).TryLock)
	time.Sleep(ttl + 200*time.Millisecond)
	flush(fds) // the copies land, later than ForceLock's TTL
	if err := later.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("the later holder's Extend once copies of an earlier ForceLock landed %v after it: %v, want nil: a late copy of ForceLock must never take the name from a later holder", ttl+200*time.Millisecond, err)
	}
	unlockOnce(t, ctx, later)
}

// testForceLockRetried: ForceLock's request is sent twice on every node,
// one after the other, as a client does that lost the first reply (its
// connection broke). The first takes the name over from its holder; the
// second is the same request, and ForceLock must return the lease that
// the first won, not fail while its token holds the name on every node,
// where nobody's lease can release it and the former holder was put out.
func testForceLockRetried(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t, unhurried, core.WithTTL(10*time.Second)).Mutex(n).TryLock)
	defer held.Unlock(ctx)
	w := e.sentTwiceClient(t, "MutexForceLock", unhurried)
	taken, err := w.Mutex(n, core.WithTTL(10*time.Second)).ForceLock(ctx)
	if err == nil {
		unlockOnce(t, ctx, taken)
		return
	}
	st, serr := e.client(t).Mutex(n).State(ctx)
	if serr != nil {
		t.Fatal(serr)
	}
	t.Fatalf("ForceLock of a held name, its request sent again on every node after a lost reply: %v; yet a token that is neither the holder's nor anyone's lease holds the name on %d nodes for %v more (the former holder's Extend: %v): ForceLock took the name without returning a lease", err, st.Nodes, st.TTL.Round(time.Second), held.Extend(ctx, 10*time.Second))
}

// testForceLockCopyDuringResumedLease: ForceLock's request, sent twice
// on every node, lands once; another process resumes its lease by ID
// (Mutex.Resume) and extends it. The copies land while that lease holds,
// later than ForceLock's TTL: they must take nothing, and above all not
// cut the lease's lock short, or another TryLock wins while the resumed
// lease is still valid.
func testForceLockCopyDuringResumedLease(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = 1500 * time.Millisecond
	w, fds := e.forceLockCopied(t)
	defer flush(fds)
	taken, err := w.Mutex(n, core.WithTTL(ttl)).ForceLock(ctx)
	if err != nil {
		t.Fatalf("ForceLock of a free name: %v", err)
	}
	resumed, err := e.client(t, unhurried).Mutex(n).Resume(ctx, taken.ID())
	if err != nil {
		t.Fatalf("Resume of ForceLock's lease: %v", err)
	}
	defer resumed.Unlock(ctx)
	if err := resumed.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("Extend of the resumed lease: %v", err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	flush(fds) // the copies land while the resumed lease holds
	time.Sleep(ttl + 100*time.Millisecond)
	other, err := e.client(t, unhurried).Mutex(n).TryLock(ctx)
	if err == nil {
		defer other.Unlock(ctx)
		if left := time.Until(resumed.Until()); left > 0 {
			t.Fatalf("a TryLock won the name while the resumed ForceLock lease is valid for %v more, copies of ForceLock's request having landed during it: two valid leases of one name", left.Round(time.Millisecond))
		}
	}
}
