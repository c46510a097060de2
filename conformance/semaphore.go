package conformance

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

func runSemaphore(t *testing.T, e env) {
	cases := map[string]func(*testing.T, env){
		"DoneWaiterTakesNothing":  testDoneWaiterTakesNothing("Semaphore"),
		"Bound":                   testSemaphoreBound,
		"CrashedHolder":           testSemaphoreCrashedHolder,
		"AcquireNAtomic":          testSemaphoreAcquireN,
		"SetPermits":              testSemaphoreSetPermits,
		"ExpiredPurged":           testSemaphoreExpiredPurged,
		"Lease":                   testSemaphoreLease,
		"WakesOnRelease":          testSemaphoreWakesOnRelease,
		"WakePassesOn":            testSemaphoreWakePassesOn,
		"BadInput":                testSemaphoreBadInput,
		"ContextEndsWait":         testSemaphoreContextEndsWait,
		"FencingIncreases":        testSemaphoreFencing,
		"SetPermitsWakes":         testSemaphoreSetPermitsWakes,
		"AvailableCountsIt":       testSemaphoreAvailable,
		"ByID":                    testSemaphoreByID,
		"LateExtendCannotShorten": testLateExtendCannotShorten("Semaphore"),
	}
	maps.Copy(cases, hostile(e, "Semaphore"))
	maps.Copy(cases, randomFaults(e, "Semaphore"))
	if e.strategy == core.Notify { // Poll waiters do not wait in line
		cases["FirstComeFirstServed"] = testSemaphoreFirstComeFirstServed
		cases["LostLeaveRetried"] = testLostLeaveRetried("Semaphore")
	}
	if len(e.addrs) >= 3 {
		cases["LostUndoRetried"] = testLostUndoRetried
		cases["StalledRounds"] = testStalledRounds("Semaphore")
		cases["QuorumSameSlots"] = testSemaphoreSameSlots
		cases["QuorumMinorityDown"] = testSemaphoreMinorityDown
		cases["QuorumFailedAttemptCleansUp"] = testSemaphoreCleansUp
	}
	if len(e.addrs) == 3 {
		cases["SemaphoreExtendCountsOwnSlot"] = testSemaphoreExtendCountsOwnSlot
	}
	for n, f := range cases {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			f(t, e)
		})
	}
}

// slowNodes lets a node take up to 200ms, where a short TTL would give it
// a tenth of the TTL: a test machine running many cases under -race is
// slower than a production network. (The TTLs stay long enough to leave
// validity after such a node.)
var slowNodes = core.WithNodeTimeout(200 * time.Millisecond)

// semKey is the key of a semaphore called name with the default prefix,
// with suffix "" for its permits and ":holders", ":size", ":fence", ":q"
// (its waiters' line) for its other keys.
func semKey(name, suffix string) string { return lockKey(name) + ":semaphore" + suffix }

// semKeys are all of a semaphore's keys.
func semKeys(name string) []string {
	var ks []string
	for _, s := range []string{"", ":holders", ":size", ":fence", ":q"} {
		ks = append(ks, semKey(name, s))
	}
	return ks
}

// heldSlots returns how many permit slots node i has, expired or not.
func (e env) heldSlots(t testing.TB, ctx context.Context, i int, name string) int64 {
	t.Helper()
	n, err := e.admin(t, i).ZCard(ctx, semKey(name, "")).Result()
	if err != nil {
		t.Fatalf("ZCARD on node %d: %v", i, err)
	}
	return n
}

// testSemaphoreBound has competing Clients take 1 or 2 of 3 permits again
// and again, with TryAcquire and Acquire, two of them abandoning a lease
// to expire, and checks the history against the capacity model: the
// permits held in validity windows never exceed 3. The long cell records
// 10,000 operations, the others 300.
func testSemaphoreBound(t *testing.T, e env) {
	const permits, clients = 3, 4
	acquisitions := 150
	if e.long() {
		acquisitions = 5000
	}
	ctx, n := ctxFor(t, 5*time.Minute), name(t)
	// Short waits, so that the run is bound by the servers, not by sleeps;
	// a short TTL, so that the abandoned leases expire soon, but node
	// timeouts that a loaded test machine seldom hits; no fencing round
	// trip, which the bound does not depend on (FencingIncreases checks it).
	opts := []core.Option{
		core.WithTTL(time.Second), core.WithNodeTimeout(400 * time.Millisecond), core.WithFencing(false),
		core.WithBackoff(core.Backoff{Base: 100 * time.Microsecond, Cap: 2 * time.Millisecond, Multiplier: 2}),
	}
	h := newHistory()
	var (
		left       atomic.Int64
		overloaded atomic.Int64 // calls that found no quorum: a stalled machine, not a safety matter
		wg         sync.WaitGroup
	)
	left.Store(int64(acquisitions))
	errs := make(chan error, clients)
	for i := range clients {
		s := e.client(t, opts...).Semaphore(n, permits)
		wg.Go(func() {
			for r := 0; ; r++ {
				k := 1 + (i+r)%2
				call := time.Now()
				var l *core.Lease
				var err error
				if r%4 == 0 {
					l, err = s.TryAcquire(ctx, k)
				} else {
					l, err = s.Acquire(ctx, k)
				}
				if errors.Is(err, core.ErrNoQuorum) {
					overloaded.Add(1)
				}
				if errors.Is(err, core.ErrNotAcquired) || errors.Is(err, core.ErrNoQuorum) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				last := left.Add(-1) < 0
				held := h.acquired(i, leaseOp{Permits: k}, call, l)
				if r == 3 && i < 2 { // this holder crashes: its permits come back at the TTL
					<-l.Done()
					held.expired()
					continue
				}
				// A lease that ran out while held (a stalled machine) is
				// ErrLost; the history has its window end at the deadline.
				// One whose release found no quorum stays held on the nodes
				// until its TTL, its window ending at the release call.
				err = held.release(func() error { return l.Unlock(ctx) })
				if errors.Is(err, core.ErrNoQuorum) {
					overloaded.Add(1)
				} else if err != nil && !errors.Is(err, core.ErrLost) {
					errs <- err
					return
				}
				if last {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := h.count(func(any) bool { return true }); got < 2*acquisitions {
		t.Fatalf("only %d operations recorded, want %d", got, 2*acquisitions)
	}
	if k := overloaded.Load(); k > 0 {
		t.Logf("%d calls found no quorum (node timeouts on a loaded machine)", k)
	}
	if !e.long() {
		h.check(t, capacityModel(permits))
		return
	}
	// porcupine's search takes seconds on 10,000 operations under -race;
	// for this model a sweep decides the same in milliseconds.
	if most, at := h.mostPermitsHeld(); most > permits {
		t.Fatalf("%d permits of %d were held at once, %v into the run", most, permits, at)
	}
}

// mostPermitsHeld returns the most permits that the recorded leases' windows
// held at one instant, and when. It decides capacityModel(n) exactly (the
// history is allowed iff the result is at most n): an acquisition taking
// effect at its return and an end at its call, the latest and earliest
// points their intervals allow, is the order that holds the fewest at
// every instant.
func (h *history) mostPermitsHeld() (int, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	type event struct {
		at    int64
		delta int
	}
	events := make([]event, 0, len(h.ops))
	for _, op := range h.ops {
		if l := op.Input.(leaseOp); l.End {
			events = append(events, event{op.Call, -l.permits()})
		} else {
			events = append(events, event{op.Return, l.permits()})
		}
	}
	// Ends first at the same instant: a window closed as another opened.
	slices.SortFunc(events, func(a, b event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	held, most, at := 0, 0, int64(0)
	for _, ev := range events {
		if held += ev.delta; held > most {
			most, at = held, ev.at
		}
	}
	return most, time.Duration(at)
}

// testSemaphoreCrashedHolder abandons a lease without releasing it: its
// permit is free again within its TTL plus one retry interval.
func testSemaphoreCrashedHolder(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	const ttl, backoffCap = time.Second, 100 * time.Millisecond
	crashed := e.client(t).Semaphore(n, 1, core.WithTTL(ttl), slowNodes)
	if _, err := crashed.TryAcquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	taken := time.Now() // the server set the permit's expiry before this
	// The crashed Client is never used again.
	s := e.client(t, core.WithBackoff(core.Backoff{Base: time.Millisecond, Cap: backoffCap, Multiplier: 2})).Semaphore(n, 1)
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire while the crashed holder's permit lives: got %v, want ErrNotAcquired", err)
	}
	l, err := s.Acquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The waiter's own acquisition on a loaded test machine needs slack.
	if took, bound := time.Since(taken), ttl+backoffCap+300*time.Millisecond; took > bound {
		t.Fatalf("the crashed holder's permit was taken again %v after it was acquired, want within %v (TTL + retry interval + slack)", took, bound)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testSemaphoreAcquireN checks that n permits are taken at once or not at
// all, and that a waiter for n holds none while it waits.
func testSemaphoreAcquireN(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.client(t).Semaphore(n, 3)
	two, err := s.TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client(t).Semaphore(n, 3).TryAcquire(ctx, 2); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire(2) with 1 of 3 free: got %v, want ErrNotAcquired", err)
	}
	for i := range e.addrs {
		if got := e.heldSlots(t, ctx, i, n); got != 2 {
			t.Fatalf("node %d holds %d permits after a refused TryAcquire(2), want 2: a partial grant", i, got)
		}
	}
	one, err := e.client(t).Semaphore(n, 3).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatalf("TryAcquire(1) of the one free permit: %v", err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 3), 3)
	if err := two.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		t.Fatalf("Acquire(3) returned (%v) with 2 of 3 permits free", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	// The waiter for 3 holds none of the free permits while it waits.
	for i := range e.addrs {
		if held := e.heldSlots(t, ctx, i, n); held != 1 {
			t.Fatalf("node %d holds %d permits while Acquire(3) waits with 1 held by another lease, want 1: a partial grant", i, held)
		}
	}
	released := time.Now()
	if err := one.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("Acquire(3): %v", r.err)
	}
	if d := r.at.Sub(released); d > wokenWithin {
		t.Fatalf("Acquire(3) returned %v after the last permit was released, want within %v", d, wokenWithin)
	}
	if free, err := s.Available(ctx); err != nil || free != 0 {
		t.Fatalf("Available while all 3 are held by one lease: got (%d, %v), want 0", free, err)
	}
	if err := r.l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend of a lease of 3 permits: %v", err)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if free, err := s.Available(ctx); err != nil || free != 3 {
		t.Fatalf("Available after the lease of 3 was released: got (%d, %v), want 3", free, err)
	}
}

// testSemaphoreSetPermits checks that the stored number is in force for
// every Client, whatever number it was made with.
func testSemaphoreSetPermits(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.client(t).Semaphore(n, 2)
	if free, err := s.Available(ctx); err != nil || free != 2 {
		t.Fatalf("Available of a new semaphore of 2: got (%d, %v), want 2", free, err)
	}
	if err := s.SetPermits(ctx, 4); err != nil {
		t.Fatal(err)
	}
	other := e.client(t).Semaphore(n, 1) // made with 1: the stored 4 wins
	if free, err := other.Available(ctx); err != nil || free != 4 {
		t.Fatalf("Available after SetPermits(4), from a Client made with 1: got (%d, %v), want 4", free, err)
	}
	three, err := other.TryAcquire(ctx, 3)
	if err != nil {
		t.Fatalf("TryAcquire(3) of 4 stored permits from a Client made with 1: %v", err)
	}
	// Lowered below what is held: nothing is revoked, nothing more granted.
	if err := s.SetPermits(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if free, err := s.Available(ctx); err != nil || free != 0 {
		t.Fatalf("Available with 3 held of 1: got (%d, %v), want 0", free, err)
	}
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire(1) with 3 held of 1: got %v, want ErrNotAcquired", err)
	}
	before := e.heldSlots(t, ctx, 0, n)
	if _, err := s.Acquire(ctx, 2); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), "which has 1") {
		t.Fatalf("Acquire(2) of a semaphore lowered to 1: got %v, want ErrInvalid saying it has 1", err)
	}
	if got := e.heldSlots(t, ctx, 0, n); got != before {
		t.Fatalf("a refused Acquire(2) of 1 permit changed the held permits from %d to %d", before, got)
	}
	if err := three.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend of a lease beyond a lowered number: %v", err)
	}
	if err := three.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if free, err := s.Available(ctx); err != nil || free != 1 {
		t.Fatalf("Available of 1 with none held: got (%d, %v), want 1", free, err)
	}
}

// testSemaphoreSetPermitsWakes checks that raising the number wakes a
// waiter at once, not at the holder's TTL.
func testSemaphoreSetPermitsWakes(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	s := e.client(t).Semaphore(n, 1)
	if _, err := s.TryAcquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 1), 1)
	raised := time.Now()
	if err := s.SetPermits(ctx, 2); err != nil {
		t.Fatal(err)
	}
	expectWoken(t, got, raised).Unlock(ctx)
}

// testSemaphoreExpiredPurged checks that an expired permit is not counted
// and is removed by the next operation, though nothing deleted it.
func testSemaphoreExpiredPurged(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	long, err := e.client(t).Semaphore(n, 3).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	short, err := e.client(t).Semaphore(n, 3, core.WithTTL(500*time.Millisecond), slowNodes).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	<-short.Done()
	for i := range e.addrs {
		e.awaitEarliestExpiry(t, ctx, i, n)
	}
	for i := range e.addrs {
		if got := e.heldSlots(t, ctx, i, n); got != 2 {
			t.Fatalf("node %d: %d permits before any operation, want 2 (one of them expired)", i, got)
		}
	}
	s := e.client(t).Semaphore(n, 3)
	if free, err := s.Available(ctx); err != nil || free != 2 {
		t.Fatalf("Available with one live and one expired permit of 3: got (%d, %v), want 2", free, err)
	}
	for i := range e.addrs {
		if got := e.heldSlots(t, ctx, i, n); got != 1 {
			t.Fatalf("node %d: %d permits after Available, want 1: the expired one was not purged", i, got)
		}
		if got := e.admin(t, i).HLen(ctx, semKey(n, ":holders")).Val(); got != 2 {
			t.Fatalf("node %d: %d holder entries after the purge, want 2 (the live lease's slot and its list)", i, got)
		}
	}
	if err := short.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock of an expired lease: got %v, want ErrLost", err)
	}
	if err := long.Unlock(ctx); err != nil {
		t.Fatalf("the live lease was touched by the purge: %v", err)
	}
}

// awaitEarliestExpiry waits until node i's clock is past the earliest
// permit expiry of the semaphore called name. A lease's validity ends
// before that, by the request's latency and the drift allowance.
func (e env) awaitEarliestExpiry(t testing.TB, ctx context.Context, i int, name string) {
	t.Helper()
	a := e.admin(t, i)
	first, err := a.ZRangeWithScores(ctx, semKey(name, ""), 0, 0).Result()
	if err != nil || len(first) == 0 {
		t.Fatalf("node %d: no permit to wait for (%v)", i, err)
	}
	for {
		now, err := a.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if float64(now.UnixMilli()) > first[0].Score {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// testSemaphoreLease checks the lease of a semaphore: Extend keeps the
// permit past its first TTL, Unlock frees it once.
func testSemaphoreLease(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l, err := e.client(t).Semaphore(n, 1, core.WithTTL(time.Second), slowNodes).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 3*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	time.Sleep(1200 * time.Millisecond) // past the first TTL: only the extension keeps it
	other := e.client(t).Semaphore(n, 1)
	if _, err := other.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire of an extended permit: got %v, want ErrNotAcquired", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("second Unlock: got %v, want ErrNotHeld", err)
	}
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is open after Unlock")
	}
	l2, err := other.TryAcquire(ctx, 1)
	if err != nil {
		t.Fatalf("TryAcquire after Unlock: %v", err)
	}
	if err := l.Extend(ctx, time.Second); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Extend after Unlock: got %v, want ErrNotHeld", err)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatalf("the next holder's permit was touched by the released lease: %v", err)
	}
}

// semWaiter starts s.Acquire(n) in a goroutine and returns once it waits:
// under Notify once it is in line (the first waiter there).
func (e env) semWaiter(t *testing.T, ctx context.Context, s *core.Semaphore, n int) <-chan locked {
	t.Helper()
	if e.strategy == core.Notify {
		return e.inLine(t, ctx, semKey(s.Name(), ":q"), 1, func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, n) })
	}
	got := startLock(ctx, func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, n) })
	time.Sleep(100 * time.Millisecond)
	return got
}

// awaitWatching waits until a waiter watches key: under Notify until it is
// subscribed, under Poll for a moment.
func (e env) awaitWatching(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	if e.strategy == core.Notify {
		e.awaitSubscribed(t, ctx, key)
		return
	}
	time.Sleep(100 * time.Millisecond)
}

// testSemaphoreWakesOnRelease checks that a release wakes a waiter at
// once: the holder's TTL (10s) is far beyond wokenWithin.
func testSemaphoreWakesOnRelease(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.client(t).Semaphore(n, 2).TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 2), 1)
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := expectWoken(t, got, released)
	if l.Token() <= held.Token() {
		t.Errorf("the waiter's token %d is not above the holder's %d", l.Token(), held.Token())
	}
	l.Unlock(ctx)
}

// testSemaphoreWakePassesOn has three waiters in one Client wait for one
// permit each while one lease holds all three: its release must let all
// three in at once. (A keyspace event wakes one waiter per Client; the
// woken one that finds permits left passes the wake-up on.)
func testSemaphoreWakePassesOn(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.client(t).Semaphore(n, 3).TryAcquire(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	c := e.client(t, core.WithNodeTimeout(time.Second)) // a waiter's attempt that timed out fails its Acquire
	const waiters = 3
	var got [waiters]<-chan locked
	for i := range got {
		if e.strategy == core.Notify {
			got[i] = e.inLine(t, ctx, semKey(n, ":q"), int64(i+1), func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 3).Acquire(ctx, 1) })
		} else {
			got[i] = startLock(ctx, func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 3).Acquire(ctx, 1) })
		}
	}
	time.Sleep(100 * time.Millisecond) // all three wait
	released := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, w := range got {
		expectWoken(t, w, released)
	}
}

// testSemaphoreFirstComeFirstServed checks that under Notify waiters take
// permits in the order they joined the line, and that a release keeps the
// permit for the waiter first in line: a TryAcquire right after it fails.
func testSemaphoreFirstComeFirstServed(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.client(t).Semaphore(n, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got [3]<-chan locked
	for i := range got {
		s := e.client(t).Semaphore(n, 1)
		got[i] = e.inLine(t, ctx, semKey(n, ":q"), int64(i+1), func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, 1) })
	}
	barger := e.client(t).Semaphore(n, 1)
	for i := range got {
		released := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if l, err := barger.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
			if l != nil {
				l.Unlock(ctx)
			}
			t.Fatalf("TryAcquire right after release %d: %v, want ErrNotAcquired: the permit goes to the waiter first in line", i, err)
		}
		held = expectWoken(t, got[i], released)
		for j, later := range got[i+1:] {
			if len(later) > 0 {
				t.Fatalf("waiter %d acquired before waiter %d, which joined the line before it", i+1+j, i)
			}
		}
	}
	held.Unlock(ctx)
}

func testSemaphoreBadInput(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.client(t)
	for _, bad := range []struct {
		what string
		s    *core.Semaphore
		n    int
		ctx  context.Context
	}{
		{"0 permits", c.Semaphore(n, 0), 1, ctx},
		{"-1 permits", c.Semaphore(n, -1), 1, ctx},
		{"n = 0", c.Semaphore(n, 3), 0, ctx},
		{"n = -1", c.Semaphore(n, 3), -1, ctx},
		{"n above the permits", c.Semaphore(n, 3), 4, ctx},
		{"an empty name", c.Semaphore("", 3), 1, ctx},
		{"a zero TTL", c.Semaphore(n, 3, core.WithTTL(0)), 1, ctx},
		{"a nil context", c.Semaphore(n, 3), 1, nil},
	} {
		for op, call := range map[string]func(context.Context, int) (*core.Lease, error){"TryAcquire": bad.s.TryAcquire, "Acquire": bad.s.Acquire} {
			l, err := call(bad.ctx, bad.n)
			if !errors.Is(err, core.ErrInvalid) || l != nil {
				t.Errorf("%s with %s: got (%v, %v), want ErrInvalid", op, bad.what, l, err)
			} else if !strings.Contains(err.Error(), "invalid argument: ") {
				t.Errorf("%s with %s: the message %q does not say what was wrong", op, bad.what, err)
			}
		}
	}
	if _, err := c.Semaphore(n, 0).Available(ctx); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Available of a semaphore of 0 permits: got %v, want ErrInvalid", err)
	}
	for _, p := range []int{0, -1} {
		if err := c.Semaphore(n, 3).SetPermits(ctx, p); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("SetPermits(%d): got %v, want ErrInvalid", p, err)
		}
	}
	for i := range e.addrs {
		if k, _ := e.admin(t, i).Exists(ctx, semKeys(n)...).Result(); k != 0 {
			t.Errorf("node %d: bad input wrote %d keys", i, k)
		}
	}
}

func testSemaphoreContextEndsWait(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	if _, err := e.client(t).Semaphore(n, 1).TryAcquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err := e.client(t).Semaphore(n, 1).Acquire(short, 1)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Acquire past its deadline: got %v, want only context.DeadlineExceeded", err)
	}
	_, err = e.client(t).Semaphore(n, 1, core.WithMaxAttempts(3)).Acquire(ctx, 1)
	if !errors.Is(err, core.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire out of attempts: got %v, want only ErrNotAcquired", err)
	}
}

// testSemaphoreFencing takes permits one after another from two Clients:
// each token is above every one returned before.
func testSemaphoreFencing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	ss := []*core.Semaphore{e.client(t).Semaphore(n, 2), e.client(t).Semaphore(n, 2)}
	var last uint64
	for i := range 20 {
		l, err := ss[i%2].Acquire(ctx, 1+i%2)
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("acquisition %d: token %d after %d, not increasing", i, l.Token(), last)
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// testSemaphoreAvailable checks Available against the leases held.
func testSemaphoreAvailable(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	s := e.client(t).Semaphore(n, 5)
	var ls []*core.Lease
	for i, k := range []int{2, 1, 2} {
		l, err := s.TryAcquire(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
		want := []int{3, 2, 0}[i]
		if free, err := s.Available(ctx); err != nil || free != want {
			t.Fatalf("Available after taking %d more: got (%d, %v), want %d", k, free, err, want)
		}
	}
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire(1) with none free: got %v, want ErrNotAcquired", err)
	}
	for _, l := range ls {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if free, err := s.Available(ctx); err != nil || free != 5 {
		t.Fatalf("Available after all were released: got (%d, %v), want 5", free, err)
	}
}

// fakeSlot gives slot of a semaphore to a foreign token on node i, as an
// acquisition would, for an hour.
func (e env) fakeSlot(t testing.TB, ctx context.Context, i int, name, slot, token string) {
	t.Helper()
	a := e.admin(t, i)
	until, err := a.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ZAdd(ctx, semKey(name, ""), redis.Z{Score: float64(until.Add(time.Hour).UnixMilli()), Member: slot}).Err(); err != nil {
		t.Fatal(err)
	}
	prev, _ := a.HGet(ctx, semKey(name, ":holders"), "t:"+token).Result()
	if prev != "" {
		prev += ","
	}
	if err := a.HSet(ctx, semKey(name, ":holders"), slot, token, "t:"+token, prev+slot).Err(); err != nil {
		t.Fatal(err)
	}
}

// testSemaphoreSameSlots builds the split that counting permits per node
// would get wrong: with 2 permits, lease A holds slot 1 on the first
// majority of nodes and lease B slot 2 on the last, so every node but the
// middle has one permit free, yet on different slots. A third lease must
// not be granted, and its attempt must leave no slot behind. Given a third
// permit, a lease must be granted, though the nodes' lowest free slots
// still differ.
func testSemaphoreSameSlots(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	nodes := len(e.addrs)
	q := nodes/2 + 1
	for i := range q {
		e.fakeSlot(t, ctx, i, n, "1", "lease-A")
		e.fakeSlot(t, ctx, nodes-q+i, n, "2", "lease-B")
	}
	s := e.client(t).Semaphore(n, 2)
	if _, err := s.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire(1) where two leases hold both permits on majorities: got %v, want ErrNotAcquired", err)
	}
	for i := range nodes {
		want := int64(1)
		if i >= nodes-q && i < q {
			want = 2
		}
		if got := e.heldSlots(t, ctx, i, n); got != want {
			t.Fatalf("node %d holds %d slots after the refused attempt, want %d: it left a slot behind", i, got, want)
		}
	}
	if free, err := s.Available(ctx); err != nil || free != 1 {
		// Each node but the middle has one free: a majority does.
		t.Fatalf("Available: got (%d, %v), want 1", free, err)
	}
	// With a third permit, slot 3 is free everywhere, while the lowest free
	// slot still differs between the nodes: the acquisition must find it.
	if err := s.SetPermits(ctx, 3); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	third, err := s.Acquire(short, 1)
	if err != nil {
		t.Fatalf("Acquire(1) with a slot free on every node: %v", err)
	}
	if err := third.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// A minority that gives other slots gives them back. With slot 1 taken
	// on node 0 only, an attempt whose scan starts at slot 1 gets slot 2
	// there and slot 1 on the rest: it holds slot 1 and must give node 0's
	// slot 2 back. Whatever the start, the lease's slots end up the same on
	// every node that has any.
	m := name(t)
	e.fakeSlot(t, ctx, 0, m, "1", "lease-C")
	for range 8 { // both starts, almost surely
		l, err := e.client(t).Semaphore(m, 2).TryAcquire(ctx, 1)
		if err != nil {
			t.Fatalf("TryAcquire(1) with slot 1 taken on node 0 only: %v", err)
		}
		var want string
		for i := range nodes {
			holders, err := e.admin(t, i).HGetAll(ctx, semKey(m, ":holders")).Result()
			if err != nil {
				t.Fatal(err)
			}
			for slot, token := range holders {
				if strings.HasPrefix(slot, "t:") || token == "lease-C" {
					continue
				}
				if want == "" {
					want = slot
				}
				if slot != want {
					t.Fatalf("node %d: the lease holds slot %s, and slot %s elsewhere: the minority's slot was not given back", i, slot, want)
				}
			}
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func testSemaphoreMinorityDown(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	addrs, down := e.withDown(t, e.tolerated())
	s := e.clientOn(t, addrs).Semaphore(n, 2)
	down()
	l, err := s.Acquire(ctx, 2)
	if err != nil {
		t.Fatalf("Acquire with a minority down: %v", err)
	}
	if free, err := s.Available(ctx); err != nil || free != 0 {
		t.Fatalf("Available with a minority down: got (%d, %v), want 0", free, err)
	}
	if err := l.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("Extend with a minority down: %v", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with a minority down: %v", err)
	}
	if err := s.SetPermits(ctx, 3); err != nil {
		t.Fatalf("SetPermits with a minority down: %v", err)
	}

	addrs, down = e.withDown(t, e.tolerated()+1)
	s = e.clientOn(t, addrs).Semaphore(name(t), 2)
	down()
	start := time.Now()
	if _, err := s.Acquire(ctx, 1); !errors.Is(err, core.ErrNoQuorum) {
		t.Fatalf("Acquire with a majority down: got %v, want ErrNoQuorum", err)
	}
	if _, err := s.Available(ctx); !errors.Is(err, core.ErrNoQuorum) {
		t.Fatalf("Available with a majority down: got %v, want ErrNoQuorum", err)
	}
	if err := s.SetPermits(ctx, 3); !errors.Is(err, core.ErrNoQuorum) {
		t.Fatalf("SetPermits with a majority down: got %v, want ErrNoQuorum", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("calls with a majority down took %v; they should fail fast", took)
	}
}

// testSemaphoreCleansUp fills the semaphore on a majority behind the
// library's back: the refused attempt must leave nothing on the nodes
// that granted it.
func testSemaphoreCleansUp(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	nodes := len(e.addrs)
	q := nodes/2 + 1
	for i := nodes - q; i < nodes; i++ {
		e.fakeSlot(t, ctx, i, n, "1", "someone-else")
	}
	if _, err := e.client(t).Semaphore(n, 1).TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryAcquire full on a majority: got %v, want ErrNotAcquired", err)
	}
	for i := range nodes - q {
		if got := e.heldSlots(t, ctx, i, n); got != 0 {
			t.Fatalf("node %d: the failed attempt left %d slots", i, got)
		}
	}
	for i := nodes - q; i < nodes; i++ {
		if v, _ := e.admin(t, i).HGet(ctx, semKey(n, ":holders"), "1").Result(); v != "someone-else" {
			t.Fatalf("node %d: the failed attempt touched the holder's slot (now %q)", i, v)
		}
	}
}

// testSemaphoreByID extends and releases a lease's permits from another
// Client by its permit ID, and refuses, writing nothing, what is not one.
func testSemaphoreByID(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l, err := e.client(t).Semaphore(n, 3, core.WithTTL(time.Second)).TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	other := e.client(t).Semaphore(n, 3)
	if err := other.Extend(ctx, l.ID(), time.Hour); err != nil {
		t.Fatalf("Extend by permit ID: %v", err)
	}
	for i := range e.addrs {
		if left := e.admin(t, i).PTTL(ctx, semKey(n, "")).Val(); left < 50*time.Minute {
			t.Fatalf("node %d: the permits expire in %v after Extend(1h) by ID", i, left)
		}
	}
	if err := other.Release(ctx, l.ID()); err != nil {
		t.Fatalf("Release by permit ID: %v", err)
	}
	if free, err := other.Available(ctx); err != nil || free != 3 {
		t.Fatalf("Available after Release by ID: got (%d, %v), want 3", free, err)
	}
	if err := other.Release(ctx, l.ID()); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("second Release by ID: got %v, want ErrNotHeld", err)
	}
	if err := l.Unlock(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Unlock of a lease released by ID: got %v, want ErrNotHeld", err)
	}

	fresh := name(t) + "-fresh"
	s := e.client(t).Semaphore(fresh, 3)
	id := "2-" + l.ID()[2:]
	for _, bad := range []string{"", "2", "2-", "0-" + id[2:], "-1-" + id[2:], "2-" + strings.ToLower(id[2:]), "2-" + id[2:] + "A", "x-" + id[2:]} {
		if err := s.Release(ctx, bad); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Release(%q): got %v, want ErrInvalid", bad, err)
		}
		if err := s.Extend(ctx, bad, time.Second); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("Extend(%q): got %v, want ErrInvalid", bad, err)
		}
	}
	if err := s.Extend(ctx, id, 0); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Extend with a zero TTL: got %v, want ErrInvalid", err)
	}
	for i := range e.addrs {
		if k := e.admin(t, i).Exists(ctx, semKeys(fresh)...).Val(); k != 0 {
			t.Fatalf("node %d: bad input wrote %d keys", i, k)
		}
	}
}
