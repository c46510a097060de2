package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// forcible is a primitive as the force-release cases use it.
type forcible struct {
	lock, try func(ctx context.Context, c *core.Client, n string, opts ...core.Option) (*core.Lease, error)
	// force frees n whoever holds it; held is the lease that holds it, nil
	// when none does.
	force func(ctx context.Context, c *core.Client, n string, held *core.Lease) error
	// byID is force by the lease's ID where that differs; nil where not.
	byID func(ctx context.Context, c *core.Client, n string, held *core.Lease) error
	line func(n string) string // the key of the line its waiters wait in under Notify
	// pollLine: its waiters wait in line under Poll too, and are granted
	// the name, so that a hand-on keeps it from a barging TryLock. (A
	// waiting writer of an RWMutex that polls is not granted it.)
	pollLine bool
	// granted: a hand-on under Notify grants the name to the waiter, which
	// then holds it without an attempt of its own (a Semaphore's wakes it).
	granted bool
}

var forcibles = map[string]forcible{
	"Mutex": {
		lock: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.Mutex(n, o...).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.Mutex(n, o...).TryLock(ctx)
		},
		force: func(ctx context.Context, c *core.Client, n string, _ *core.Lease) error {
			return c.Mutex(n).ForceUnlock(ctx)
		},
		line:    queueKey,
		granted: true,
	},
	// An owner's: the hand-on reserves the lock for an owner's waiter,
	// which takes it with an attempt.
	"MutexOwned": {
		lock: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.Mutex(n, append(o, core.WithOwner(rand.Text()))...).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.Mutex(n, append(o, core.WithOwner(rand.Text()))...).TryLock(ctx)
		},
		force: func(ctx context.Context, c *core.Client, n string, _ *core.Lease) error {
			return c.Mutex(n).ForceUnlock(ctx)
		},
		line: queueKey,
	},
	"FairMutex": {
		lock: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.FairMutex(n, o...).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.FairMutex(n, o...).TryLock(ctx)
		},
		force: func(ctx context.Context, c *core.Client, n string, _ *core.Lease) error {
			return c.FairMutex(n).ForceUnlock(ctx)
		},
		line:     func(n string) string { return fairKey(n, ":q") },
		pollLine: true,
		granted:  true,
	},
	// An owner's: a hand-on grants the owner's waiter the owner's hash.
	"FairMutexOwned": {
		lock: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.FairMutex(n, append(o, core.WithOwner(rand.Text()))...).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.FairMutex(n, append(o, core.WithOwner(rand.Text()))...).TryLock(ctx)
		},
		force: func(ctx context.Context, c *core.Client, n string, _ *core.Lease) error {
			return c.FairMutex(n).ForceUnlock(ctx)
		},
		line:     func(n string) string { return fairKey(n, ":q") },
		pollLine: true,
		granted:  true,
	},
	"RWMutex": {
		lock: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.RWMutex(n, o...).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.RWMutex(n, o...).TryLock(ctx)
		},
		force: func(ctx context.Context, c *core.Client, n string, _ *core.Lease) error {
			return c.RWMutex(n).ForceUnlock(ctx)
		},
		line:    func(n string) string { return rwKey(n, ":wq") },
		granted: true,
	},
	// An owner's write lock: a hand-on grants the owner's writer the
	// owner's hash.
	"RWMutexOwned": {
		lock: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.RWMutex(n, append(o, core.WithOwner(rand.Text()))...).Lock(ctx)
		},
		try: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.RWMutex(n, append(o, core.WithOwner(rand.Text()))...).TryLock(ctx)
		},
		force: func(ctx context.Context, c *core.Client, n string, _ *core.Lease) error {
			return c.RWMutex(n).ForceUnlock(ctx)
		},
		line:    func(n string) string { return rwKey(n, ":wq") },
		granted: true,
	},
	"Semaphore": {
		lock: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.Semaphore(n, 1, o...).Acquire(ctx, 1)
		},
		try: func(ctx context.Context, c *core.Client, n string, o ...core.Option) (*core.Lease, error) {
			return c.Semaphore(n, 1, o...).TryAcquire(ctx, 1)
		},
		// By the holder's token, as State lists it.
		force: func(ctx context.Context, c *core.Client, n string, held *core.Lease) error {
			if held == nil {
				// No holder to name: a made-up one holds nothing.
				if err := c.Semaphore(n, 1).ForceRelease(ctx, rand.Text()); !errors.Is(err, core.ErrNotHeld) {
					return fmt.Errorf("a holder token that holds nothing: %w, want ErrNotHeld", err)
				}
				return nil
			}
			return c.Semaphore(n, 1).ForceRelease(ctx, strings.Split(held.ID(), "-")[1])
		},
		byID: func(ctx context.Context, c *core.Client, n string, held *core.Lease) error {
			return c.Semaphore(n, 1).ForceRelease(ctx, held.ID())
		},
		line: func(n string) string { return semKey(n, ":q") },
	},
}

// forceCases are the force-release cases of primitive p, their names
// ending in suffix: its waiters' hand-on under either strategy, the rest
// under one (Poll: no one waits).
func forceCases(e env, p, suffix string) map[string]func(*testing.T, env) {
	f := forcibles[p]
	cases := map[string]func(*testing.T, env){
		"ForceHandsOn" + suffix: func(t *testing.T, e env) { testForceHandsOn(t, e, f) },
	}
	if p == "Mutex" && e.strategy == core.Notify { // a line to leave as it is
		cases["ForceClosesDone"] = testForceClosesDone
		cases["ForceLockTakesOver"] = testForceLockTakesOver
	}
	if p == "MutexOwned" && e.strategy == core.Notify {
		cases["ForceKeepsReservation"] = testForceKeepsReservation
	}
	if p == "Mutex" && e.strategy == core.Poll { // no line: the strategy does not matter
		cases["ForceLockCopyRefused"] = testForceLockCopyRefused
		cases["ForceLockRetried"] = testForceLockRetried
		if len(e.addrs) == 3 && !e.cluster { // seconds of TTLs waited out: on three nodes alone
			cases["ForceLockLateCopyRefused"] = testForceLockLateCopyRefused
			cases["ForceLockCopyDuringResumedLease"] = testForceLockCopyDuringResumedLease
		}
		cases["ForceLockHolderKeptChanging"] = testForceLockHolderKeptChanging
		cases["ForceLockOwnedRefused"] = testForceLockOwnedRefused
	}
	if p == "Semaphore" && e.strategy == core.Poll {
		cases["ForceUnknownHolder"] = testForceUnknownHolder
	}
	// A Mutex's release differs by strategy; the others' do not.
	if p == "Mutex" || e.strategy == core.Poll && (p == "FairMutex" || p == "RWMutex") {
		cases["ForceLostSaysForced"+suffix] = func(t *testing.T, e env) { testForceLostSaysForced(t, e, f) }
	}
	if e.strategy == core.Poll {
		cases["ForceFrees"+suffix] = func(t *testing.T, e env) { testForceFrees(t, e, f) }
		cases["ForceFreeName"+suffix] = func(t *testing.T, e env) { testForceFreeName(t, e, f) }
	}
	return cases
}

// testForceFrees forces a held name free: another Client takes it with a
// higher fencing token, and the former holder's Extend and Unlock report
// ErrLost. Forced again, the new holder's watchdog closes its Done before
// its validity deadline runs out: the watchdog heard, not the timer.
func testForceFrees(t *testing.T, e env, f forcible) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	admin := e.client(t, unhurried)
	held := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) {
		return f.lock(ctx, e.client(t, unhurried), n, core.WithTTL(10*time.Second))
	})
	if err := f.force(ctx, admin, n, held); err != nil {
		t.Fatalf("force-release of a held name: %v", err)
	}
	const ttl = 3 * time.Second // the watchdog extends every second
	watched, err := f.try(ctx, e.client(t, unhurried), n, core.WithTTL(ttl), core.WithAutoExtend())
	if err != nil {
		t.Fatalf("taking the name after the force-release: %v", err)
	}
	if watched.Token() <= held.Token() {
		t.Fatalf("token %d after the forced holder's %d: not increasing", watched.Token(), held.Token())
	}
	if err := held.Extend(ctx, 10*time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("the forced holder's Extend: %v, want ErrLost", err)
	}
	if err := held.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("the forced holder's Unlock: %v, want ErrLost", err)
	}

	force := f.force
	if f.byID != nil {
		force = f.byID
	}
	if err := force(ctx, admin, n, watched); err != nil {
		t.Fatalf("force-release of a watched lease: %v", err)
	}
	until := watched.Until()
	select {
	case <-watched.Done():
	case <-ctx.Done():
		t.Fatal("the forced lease's Done did not close")
	}
	if closed := time.Now(); !closed.Before(until) || !errors.Is(watched.Err(), core.ErrLost) {
		t.Fatalf("the forced lease's Done closed %v after its validity deadline, with Err %v; want before it, ErrLost: its watchdog did not hear", closed.Sub(until), watched.Err())
	}
}

// testForceHandsOn forces a held name free while a waiter waits: the
// waiter holds it at once, as a release would hand it on: under Notify
// without waiting out the holder's TTL, and on one node granted it
// without an attempt of its own where the primitive grants; a TryLock
// right after the force finds it taken wherever the waiter waits in line.
func testForceHandsOn(t *testing.T, e env, f forcible) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) {
		return f.lock(ctx, e.client(t, unhurried), n, core.WithTTL(10*time.Second))
	})
	var attempts atomic.Int64
	waiter, _ := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if strings.HasSuffix(c.Op, "Acquire") {
			attempts.Add(1)
		}
		return faults.Fault{}
	}, unhurried, core.WithTTL(time.Minute)) // it refreshes its place in line every 15s
	lock := func(ctx context.Context) (*core.Lease, error) { return f.lock(ctx, waiter, n) }
	var got <-chan locked
	inLine := e.strategy == core.Notify || f.pollLine
	if inLine {
		// A FairMutex's holder keeps its place in line.
		before, err := e.admin(t, 0).ZCard(ctx, f.line(n)).Result()
		if err != nil {
			t.Fatal(err)
		}
		got = e.inLine(t, ctx, f.line(n), before+1, lock)
	} else {
		got = startLock(ctx, lock)
		e.awaitWatching(t, ctx, lockKey(n))
	}
	admin := e.client(t, unhurried)
	// On one node a grant leaves the waiter nothing to attempt (on more,
	// the grants of some may come after it attempts for the others).
	counted := f.granted && e.strategy == core.Notify && len(e.addrs) == 1
	if counted {
		untilAllWait(&attempts) // its attempts as it joins are done
	}
	joined, forced := attempts.Load(), time.Now()
	if err := f.force(ctx, admin, n, held); err != nil {
		t.Fatalf("force-release with a waiter: %v", err)
	}
	if inLine {
		if l, err := f.try(ctx, admin, n); !errors.Is(err, core.ErrNotAcquired) {
			if l != nil {
				l.Unlock(ctx)
			}
			t.Fatalf("TryLock right after a force-release with a waiter in line: %v, want ErrNotAcquired: the name was not handed on", err)
		}
	}
	var w *core.Lease
	if e.strategy == core.Notify {
		w = expectWoken(t, got, forced)
		if n := attempts.Load() - joined; counted && n > 0 {
			t.Fatalf("the waiter made %d attempts after the force-release, want none: it was not granted the name", n)
		}
	} else if r := <-got; r.err != nil {
		t.Fatalf("the waiter after the force-release: %v", r.err)
	} else {
		w = r.l
	}
	if w.Token() <= held.Token() {
		t.Fatalf("the waiter's token %d after the forced holder's %d: not increasing", w.Token(), held.Token())
	}
	if err := held.Extend(ctx, 10*time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("the forced holder's Extend: %v, want ErrLost", err)
	}
	unlockOnce(t, ctx, w)
}

// testForceFreeName forces a name that no one holds, new and then
// released: nil both times, and the name is as free as before.
func testForceFreeName(t *testing.T, e env, f forcible) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.client(t, unhurried)
	if err := f.force(ctx, c, n, nil); err != nil {
		t.Fatalf("force-release of a new name: %v, want nil", err)
	}
	l := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return f.try(ctx, c, n) })
	unlockOnce(t, ctx, l)
	if err := f.force(ctx, c, n, nil); err != nil {
		t.Fatalf("force-release of a released name: %v, want nil", err)
	}
	l = mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return f.try(ctx, c, n) })
	unlockOnce(t, ctx, l)
}

// testForceFreesReaders forces an RWMutex held by two readers: both read
// leases are lost, and a writer takes the lock.
func testForceFreesReaders(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	var readers []*core.Lease
	for range 2 {
		readers = append(readers, mustLock(t, ctx, e.client(t, unhurried).RWMutex(n, core.WithTTL(10*time.Second)).TryRLock))
	}
	if err := e.client(t, unhurried).RWMutex(n).ForceUnlock(ctx); err != nil {
		t.Fatalf("force-release of a read-locked name: %v", err)
	}
	w := mustLock(t, ctx, e.client(t, unhurried).RWMutex(n).TryLock)
	for i, r := range readers {
		if err := r.Extend(ctx, 10*time.Second); !errors.Is(err, core.ErrLost) {
			t.Fatalf("reader %d's Extend after the force-release: %v, want ErrLost", i, err)
		}
	}
	unlockOnce(t, ctx, w)
}
