package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

func runFairMutex(t *testing.T, e env) {
	cases := linedLockCases(e, "FairMutex")
	maps.Copy(cases, map[string]func(*testing.T, env){
		"BadInput":         testFairBadInput,
		"Exclusive":        testFairExclusive,
		"NoBarging":        testFairNoBarging,
		"FirstComeFirst":   testFairOrder,
		"GiveUpLeavesLine": testFairGiveUp,
		"CrashedHolder":    testFairCrashedHolder,
		"CrashedHead":      testFairCrashedHead,
		"AutoExtend":       testFairAutoExtend,
		"History":          testFairHistory,
	})
	if e.strategy == core.Poll { // a read; the wait strategy plays no part
		cases["State"] = testFairState
	}
	maps.Copy(cases, forceCases(e, "FairMutex", ""))
	maps.Copy(cases, metadataCases("FairMutex"))
	maps.Copy(cases, forceCases(e, "FairMutexOwned", "Owned"))
	maps.Copy(cases, reentrantCases(e, "FairMutex"))
	if len(e.addrs) >= 3 {
		cases["MinorityDown"] = testFairMinorityDown
		cases["MajorityDown"] = testFairMajorityDown
	}
	// On servers of its own, which it pauses; the waiting is the same
	// under Poll.
	if !e.cluster && len(e.addrs) <= 3 && e.strategy == core.Notify && e.server != "miniredis" {
		cases["WritePauseWaitedOut"] = testWritePauseWaitedOut
	}
	runCases(t, e, cases)
}

// linedLockCases are the cases that the locks whose waiters always wait in
// line, FairMutex and RWMutex (p), share.
func linedLockCases(e env, p string) map[string]func(*testing.T, env) {
	cases := map[string]func(*testing.T, env){
		"DoneWaiterTakesNothing":  testDoneWaiterTakesNothing(p),
		"LostLeaveRetried":        testLostLeaveRetried(p),
		"LateAttemptAfterGiveUp":  testLateAttemptAfterGiveUp(p),
		"LateExtendCannotShorten": testLateExtendCannotShorten(p),
		"LapsedTicketsDropped":    testLapsedTicketsDropped(p),
	}
	maps.Copy(cases, hostile(e, p))
	maps.Copy(cases, randomFaults(e, p))
	maps.Copy(cases, leaseCheckCases(e, p))
	if e.eavesdropped() {
		cases["ForgedWakesIgnored"] = testForgedWakesIgnored(p)
	}
	if e.redialed() {
		cases["ReconnectingWaiterServed"] = testReconnectingWaiterServed(p)
		cases["ReconnectingHolderChecks"] = testReconnectingHolderChecksOf(p)
		cases["LateSubscriptionWaiterServed"] = testLateSubscriptionWaiterServed(p)
	}
	if len(e.addrs) >= 3 {
		cases["StalledRounds"] = testStalledRounds(p)
		cases["LateUndoSparesGrant"] = testLateUndoSparesGrant(p)
		cases["LateAttemptCannotShorten"] = testLateAttemptCannotShorten(p)
		maps.Copy(cases, landsLateCasesFor(e, p, ""))
		if _, ok := exclusiveLocks[p+"Owned"]; ok {
			maps.Copy(cases, landsLateCasesFor(e, p+"Owned", "Owned"))
		}
	}
	return cases
}

// crashSlack is what a case that abandons a Client allows on top of the
// bound it checks: round trips and scheduling on a loaded 2-core machine.
const crashSlack = 2 * time.Second

// shortTTL is the TTL of the cases that wait for an expiry or a lapse.
// Their Clients are patient: a node timeout of a third of it rather than a
// tenth, so that a round trip on a loaded machine does not fail the case.
const shortTTL = time.Second

var patient = core.WithNodeTimeout(shortTTL / 3)

// lineRetry bounds how long a waiter goes without an attempt under either
// strategy: a quarter TTL, plus at most a quarter TTL of backoff.
func lineRetry(ttl time.Duration) time.Duration { return ttl / 2 }

// longHistory reports whether this cell records a long history: the long
// cell of its topology, once per driver (go-redis's RESP2 harness has the
// same driver name, and its long cell would only repeat the RESP3 one).
func (e env) longHistory(t *testing.T) bool {
	return e.long() && e.drivers(t, e.addrs[:1])[0].Protocol() == 3
}

// underLoad retries lock while it fails with ErrNoQuorum, which in the
// long cases on a loaded machine means that round trips outlasted the node
// timeout, not that the primitive misbehaved; it gives up after ten in a
// row. Only a Try call needs it: a Lock waits that out itself.
func underLoad(lock func(context.Context) (*core.Lease, error)) func(context.Context) (*core.Lease, error) {
	return func(ctx context.Context) (*core.Lease, error) {
		for i := 0; ; i++ {
			l, err := lock(ctx)
			if !errors.Is(err, core.ErrNoQuorum) || i == 9 {
				return l, err
			}
		}
	}
}

// released tells a release that ended the lease from one that did not:
// a lease that ran out while held (a stalled machine) is ErrLost, one
// whose release reached too few nodes (ErrNoQuorum) expires at its TTL,
// and the history ends its window at the call either way.
func released(err error) bool {
	return err == nil || errors.Is(err, core.ErrLost) || errors.Is(err, core.ErrNoQuorum)
}

// startLock runs lock in a goroutine; its result arrives on the channel.
func startLock(ctx context.Context, lock func(context.Context) (*core.Lease, error)) <-chan locked {
	got := make(chan locked, 1)
	go func() {
		l, err := lock(ctx)
		got <- locked{l, err, time.Now()}
	}()
	return got
}

// handOff releases held and returns how long until the waiter got (which
// waits for it) held, failing the case when it did not within d, or got
// an error; the waiter's lease is released.
func handOff(t *testing.T, ctx context.Context, held *core.Lease, got <-chan locked, d time.Duration) time.Duration {
	t.Helper()
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter after the release: %v", r.err)
		}
		r.l.Unlock(ctx)
		return r.at.Sub(released)
	case <-time.After(d):
		t.Fatalf("the waiter did not hold within %v of the release", d)
		return 0
	}
}

// takeAndRelease takes a lease with lock and releases it at once.
func takeAndRelease(ctx context.Context, lock func(context.Context) (*core.Lease, error)) error {
	l, err := lock(ctx)
	if err != nil {
		return err
	}
	return l.Unlock(ctx)
}

// mustLock returns the lease that lock takes, failing t without one.
func mustLock(t *testing.T, ctx context.Context, lock func(context.Context) (*core.Lease, error)) *core.Lease {
	t.Helper()
	l, err := lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// startTaking runs take of name through c in a goroutine; its result
// arrives on the channel.
func startTaking(ctx context.Context, take taker, c *core.Client, name string) <-chan locked {
	return startLock(ctx, func(ctx context.Context) (*core.Lease, error) { return take(ctx, c, name) })
}

// inLine starts lock and returns once the sorted set key has at least n
// members on every node of the cell, that is, once n waiters are in line.
// It fails the case when lock returns first.
func (e env) inLine(t *testing.T, ctx context.Context, key string, n int64, lock func(context.Context) (*core.Lease, error)) <-chan locked {
	t.Helper()
	got := startLock(ctx, lock)
	e.awaitLine(t, ctx, key, n, got)
	return got
}

// awaitLine returns once the sorted set key has at least n members on
// every node of the cell. It fails the case when got (nil: never) tells of
// a Lock that returned first.
func (e env) awaitLine(t *testing.T, ctx context.Context, key string, n int64, got <-chan locked) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for i := range e.addrs {
		admin := e.admin(t, i)
		for {
			c, err := admin.ZCard(ctx, key).Result()
			switch {
			case err != nil:
				t.Fatalf("ZCARD %s on node %d: %v", key, i, err)
			case c >= n:
			case time.Now().After(deadline):
				t.Fatalf("%s has %d entries on node %d after 5s, want %d", key, c, i, n)
			default:
				select {
				case r := <-got:
					t.Fatalf("Lock returned (%v) before it joined the line", r.err)
				case <-time.After(5 * time.Millisecond):
				}
				continue
			}
			break
		}
	}
}

// expectCard checks that the sorted set key has n members on every node,
// within two seconds.
func (e env) expectCard(t *testing.T, ctx context.Context, key string, n int64, what string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second) // a leave that failed is retried in the background
	for i := range e.addrs {
		for {
			c, err := e.admin(t, i).ZCard(ctx, key).Result()
			if err == nil && c == n {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: node %d has %d entries in %s (err %v), want %d", what, i, c, key, err, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func testFairBadInput(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.client(t)
	expectBadLockInput(t, ctx, n, func(name string, opts ...core.Option) leaseCalls {
		m := c.FairMutex(name, opts...)
		return leaseCalls{"TryLock": m.TryLock, "Lock": m.Lock}
	}, badOption{"a TTL of a fraction of a millisecond", core.WithTTL(1500 * time.Microsecond)})
	if k, _ := e.admin(t, 0).Exists(ctx, fairKey(n, ""), fairKey(n, ":q"), fairKey(n, ":lapse")).Result(); k != 0 {
		t.Errorf("bad input wrote %d keys", k)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for op, call := range map[string]func(context.Context) (*core.Lease, error){"TryLock": c.FairMutex(n).TryLock, "Lock": c.FairMutex(n).Lock} {
		if _, err := call(ctx); !errors.Is(err, core.ErrClosed) {
			t.Errorf("%s on a closed client: got %v, want ErrClosed", op, err)
		}
	}
}

func testFairExclusive(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	a, b := e.client(t).FairMutex(n), e.client(t).FairMutex(n)
	l, err := a.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock on a free lock: %v", err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock on a held lock: got %v, want ErrNotAcquired", err)
	}
	ml, err := e.client(t).Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("a Mutex of the same name is another lock: %v", err)
	}
	ml.Unlock(ctx)
	unlockOnce(t, ctx, l)
	nextTokenHigher(t, ctx, b.Lock, l)
	e.expectCard(t, ctx, fairKey(n, ":q"), 0, "after the last Unlock")
}

// testFairNoBarging: once someone waits, a release goes to the waiter,
// not to whoever asks first.
func testFairNoBarging(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t).FairMutex(n).TryLock)
	// The waiter is patient: one that gives up (its round timed out on a
	// loaded machine) leaves the line, and the TryLock may then win.
	got := e.inLine(t, ctx, fairKey(n, ":q"), 1, e.client(t, patient).FairMutex(n).Lock)
	other := e.client(t).FairMutex(n)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if l, err := other.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		waiter := "still waiting"
		select {
		case r := <-got:
			waiter = fmt.Sprintf("returned %v", r.err)
		default:
		}
		t.Fatalf("TryLock right after a release with a waiter in line (%s): got %v, want ErrNotAcquired", waiter, err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter's Lock: %v", r.err)
	}
	if r.l.Token() <= held.Token() {
		t.Errorf("the waiter's token %d is not above the holder's %d", r.l.Token(), held.Token())
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := other.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with no one in line: %v", err)
	}
	l.Unlock(ctx)
}

// testFairOrder has waiters join the line one after another, each once
// the one before is in line on every node, and checks that they acquire
// in that order.
func testFairOrder(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t).FairMutex(n).TryLock)
	const waiters = 5
	var (
		mu    sync.Mutex
		order []int
	)
	errs := make(chan error, waiters)
	for i := range waiters {
		m := e.client(t, unhurried).FairMutex(n) // one whose undo timed out rejoins behind the next
		e.inLine(t, ctx, fairKey(n, ":q"), int64(i+1), func(ctx context.Context) (*core.Lease, error) {
			l, err := m.Lock(ctx)
			if err == nil {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
				err = l.Unlock(ctx)
			}
			errs <- err
			return l, err
		})
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for range waiters {
		if err := <-errs; err != nil {
			t.Fatalf("a waiter's Lock or Unlock: %v", err)
		}
	}
	if want := []int{0, 1, 2, 3, 4}; !slices.Equal(order, want) {
		t.Fatalf("waiters acquired in the order %v, want %v (the order they joined the line)", order, want)
	}
}

// testFairGiveUp: a waiter whose ctx ends or whose attempts run out leaves
// the line at once, so the lock goes straight to the next one.
func testFairGiveUp(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t).FairMutex(n).TryLock)
	e.giveUpsLeaveLine(t, ctx, fairKey(n, ":q"), "waiter", func(opts ...core.Option) func(context.Context) (*core.Lease, error) {
		return e.client(t).FairMutex(n, opts...).Lock
	})
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := e.client(t).FairMutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock after the waiters gave up: %v", err)
	}
	l.Unlock(ctx)
}

// giveUpsLeaveLine has a waiter (who) whose ctx ends, then one whose
// attempts run out, each with the Lock that lock makes with opts, while
// the lock is held: each must have left the line queue at once.
func (e env) giveUpsLeaveLine(t *testing.T, ctx context.Context, queue, who string, lock func(opts ...core.Option) func(context.Context) (*core.Lease, error)) {
	t.Helper()
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := lock()(short); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Lock past its deadline: got %v, want only context.DeadlineExceeded", err)
	}
	e.expectCard(t, ctx, queue, 0, "after a "+who+"'s ctx ended")
	if _, err := lock(core.WithMaxAttempts(3))(ctx); !errors.Is(err, core.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock out of attempts: got %v, want only ErrNotAcquired", err)
	}
	e.expectCard(t, ctx, queue, 0, "after a "+who+" ran out of attempts")
}

// locker is how a case takes a lease of one kind on a Client's primitive
// called name: a FairMutex's Lock, an RWMutex's RLock or Lock.
type locker func(c *core.Client, name string) func(context.Context) (*core.Lease, error)

// crashHolder takes a lease with hold on a Client that it then abandons
// (closed, without Unlock) while another Client waits with next: the
// waiter must acquire after the abandoned lease's validity, and within
// its TTL and one retry interval.
func (e env) crashHolder(t *testing.T, hold, next locker) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	crashed := e.client(t, patient)
	l, err := hold(crashed, n)(ctx)
	if err != nil {
		t.Fatal(err)
	}
	granted := time.Now()
	got := startLock(ctx, next(e.client(t, patient), n))
	crashed.Close()
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	if !r.at.After(l.Until()) {
		t.Fatalf("the waiter acquired at %v, before the abandoned lease's validity ended at %v", r.at, l.Until())
	}
	if d, limit := r.at.Sub(granted), shortTTL+lineRetry(shortTTL)+crashSlack; d > limit {
		t.Fatalf("the waiter acquired %v after the lease was abandoned, want within %v", d, limit)
	}
}

// testFairCrashedHolder abandons the holder's Client without Unlock.
func testFairCrashedHolder(t *testing.T, e env) {
	fair := func(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
		return c.FairMutex(n, core.WithTTL(shortTTL)).Lock
	}
	e.crashHolder(t, fair, fair)
}

// testFairCrashedHead abandons the Client of the waiter first in line: its
// place lapses and the next waiter acquires, within the lapse time (the
// TTL) and one retry interval.
func testFairCrashedHead(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = shortTTL
	held := mustLock(t, ctx, e.client(t, patient).FairMutex(n).TryLock)
	crashed := e.client(t, patient)
	head := e.inLine(t, ctx, fairKey(n, ":q"), 1, crashed.FairMutex(n, core.WithTTL(ttl)).Lock)
	next := e.inLine(t, ctx, fairKey(n, ":q"), 2, e.client(t, patient).FairMutex(n, core.WithTTL(ttl)).Lock)
	crashed.Close()
	at := time.Now()
	if r := <-head; !errors.Is(r.err, core.ErrClosed) {
		t.Fatalf("Lock of the abandoned Client: got %v, want ErrClosed", r.err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-next
	if r.err != nil {
		t.Fatalf("the second waiter's Lock: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	if d, limit := r.at.Sub(at), ttl+lineRetry(ttl)+crashSlack; d > limit {
		t.Fatalf("the second waiter acquired %v after the first crashed, want within %v", d, limit)
	}
}

func testFairAutoExtend(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	const ttl = shortTTL
	l := mustLock(t, ctx, e.client(t, patient).FairMutex(n, core.WithTTL(ttl), core.WithAutoExtend()).Lock)
	time.Sleep(2 * ttl)
	if err := l.Err(); err != nil {
		t.Fatalf("auto-extended lease after 2 TTLs: %v", err)
	}
	if _, err := e.client(t, patient).FairMutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock on an auto-extended lock: got %v, want ErrNotAcquired (the lease's Err is now %v)", err, l.Err())
	}
	if err := l.Extend(ctx, 3*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if left := time.Until(l.Until()); left < 2*time.Second {
		t.Fatalf("Until is %v away after Extend(3s)", left)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Extend after Unlock: got %v, want ErrNotHeld", err)
	}
}

// testFairHistory has competing Clients take the lock again and again,
// with Lock and TryLock, and checks the history against the one-holder
// model and that fencing tokens increase from holder to holder. The long
// cell records longAcquisitions and their releases.
func testFairHistory(t *testing.T, e env) {
	ctx, n := ctxFor(t, 5*time.Minute), name(t)
	const clients = 3
	total := e.historyTotal(t, 150)
	open := func(c *core.Client) *core.FairMutex { return c.FairMutex(n, core.WithTTL(5*time.Second)) }
	h := fencedHistory(t, ctx, e, clients, total, open, func(m *core.FairMutex, _, r int) turn {
		if r%5 == 0 {
			return turn{lock: m.TryLock, try: true, exclusive: true}
		}
		return turn{lock: m.Lock, exclusive: true}
	})
	h.checkCount(t, total)
	h.check(t, capacityModel(1))
}

func fairLock(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
	return c.FairMutex(n).Lock
}

func testFairMinorityDown(t *testing.T, e env) { e.minorityDown(t, fairLock, fairLock) }

func testFairMajorityDown(t *testing.T, e env) {
	e.majorityDown(t, func(n string) []string { return []string{fairKey(n, ""), fairKey(n, ":q")} }, fairLock)
}
