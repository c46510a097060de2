package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

func runSemaphore(t *testing.T, e env) {
	cases := map[string]func(*testing.T, env){
		"DoneWaiterTakesNothing":         testDoneWaiterTakesNothing("Semaphore"),
		"Bound":                          testSemaphoreBound,
		"CrashedHolder":                  testSemaphoreCrashedHolder,
		"AcquireNAtomic":                 testSemaphoreAcquireN,
		"SetPermits":                     testSemaphoreSetPermits,
		"ExpiredPurged":                  testSemaphoreExpiredPurged,
		"Lease":                          testSemaphoreLease,
		"WakesOnRelease":                 testSemaphoreWakesOnRelease,
		"WakePassesOn":                   testSemaphoreWakePassesOn,
		"BadInput":                       testSemaphoreBadInput,
		"ContextEndsWait":                testSemaphoreContextEndsWait,
		"FencingIncreases":               testSemaphoreFencing,
		"SetPermitsWakes":                testSemaphoreRaiseWakes(func(ctx context.Context, s *core.Semaphore) error { return s.SetPermits(ctx, 2) }),
		"AddPermitsWakes":                testSemaphoreRaiseWakes(func(ctx context.Context, s *core.Semaphore) error { return s.AddPermits(ctx, 1) }),
		"AvailableCountsIt":              testSemaphoreAvailable,
		"ByID":                           testSemaphoreByID,
		"ReleaseByIDReported":            testReleaseByIDReported,
		"ReleaseAll":                     testSemaphoreReleaseAll,
		"HostileReleaseAllWritesNothing": testHostileReleaseAllWritesNothing,
		"LateExtendCannotShorten":        testLateExtendCannotShorten("Semaphore"),
	}
	maps.Copy(cases, metadataCases("Semaphore"))
	if e.strategy == core.Poll { // no one waits: the wait strategy plays no part
		cases["State"] = testSemaphoreState
		cases["TTLByID"] = testSemaphoreTTLByID
		cases["TrySetPermits"] = testSemaphoreTrySetPermits
		cases["AddPermits"] = testSemaphoreAddPermits
		cases["AddPermitsCopy"] = testSemaphoreAddPermitsCopy
		cases["TrySetPermitsRetried"] = testSemaphoreTrySetPermitsRetried
		cases["AddPermitsRetried"] = testSemaphoreAddPermitsRetried
		cases["ReleaseAllRetried"] = testSemaphoreReleaseAllRetried
		cases["DrainPermits"] = testSemaphoreDrainPermits
		if len(e.addrs) == 1 && !e.cluster { // one server gives the places
			cases["KeptPlaceMalformed"] = testSemaphoreKeptPlaceMalformed
		}
	}
	maps.Copy(cases, forceCases(e, "Semaphore", ""))
	maps.Copy(cases, hostile(e, "Semaphore"))
	maps.Copy(cases, randomFaults(e, "Semaphore"))
	maps.Copy(cases, leaseCheckCases(e, "Semaphore"))
	if e.strategy == core.Notify { // Poll waiters do not wait in line
		cases["FirstComeFirstServed"] = testSemaphoreFirstComeFirstServed
		cases["DrainLeavesLine"] = testSemaphoreDrainLeavesLine
		cases["TicketsLifetime"] = testSemaphoreTicketsLifetime
		cases["LostLeaveRetried"] = testLostLeaveRetried("Semaphore")
		cases["RejoinKeepsGivenPlace"] = testSemaphoreRejoinKeepsGivenPlace
		if !e.cluster { // a Cluster's PUBLISH counts one node's listeners only
			cases["DeadWaiterPassedOver"] = testSemaphoreDeadWaiterPassedOver
			cases["DeadClientsPassedOver"] = testSemaphoreDeadClientsPassedOver
		}
	}
	if e.eavesdropped() {
		cases["ForgedWakesIgnored"] = testForgedWakesIgnored("Semaphore")
	}
	if e.redialed() {
		if len(e.addrs) == 1 { // with a quorum its place is when Acquire began, which it keeps
			cases["PassedOverKeepsPlace"] = testSemaphorePassedOverKeepsPlace
		}
		cases["ReconnectingWaiterServed"] = testReconnectingWaiterServed("Semaphore")
		cases["LateSubscriptionWaiterServed"] = testLateSubscriptionWaiterServed("Semaphore")
	}
	if len(e.addrs) >= 3 {
		cases["LostUndoRetried"] = testLostUndoRetried
		cases["StalledRounds"] = testStalledRounds("Semaphore")
		cases["QuorumSameSlots"] = testSemaphoreSameSlots
		cases["QuorumMinorityDown"] = testSemaphoreMinorityDown
		cases["QuorumFailedAttemptCleansUp"] = testSemaphoreCleansUp
		maps.Copy(cases, landsLateCasesFor(e, "Semaphore", ""))
		cases["ReleaseByIDMarksForLeaseTTL"] = testReleaseByIDMarksForLeaseTTL
		cases["ReleaseAllMarksLateAttempt"] = testReleaseAllMarksLateAttempt
		cases["ReleaseAllLostReplyDecides"] = testReleaseAllLostReplyDecides
		if e.strategy == core.Notify { // Poll waiters do not wait in line
			cases["GiveUpLandsLate"] = testSemaphoreGiveUpLandsLate
			cases["LostWinnerLeaveRetried"] = testSemaphoreLostWinnerLeaveRetried
			cases["WinnerLandsLate"] = testSemaphoreWinnerLandsLate
		}
	}
	if len(e.addrs) == 3 {
		cases["SemaphoreExtendCountsOwnSlot"] = testSemaphoreExtendCountsOwnSlot
	}
	runCases(t, e, cases)
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
	unlockOnce(t, ctx, l)
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
		expectInvalid(t, bad.ctx, bad.what, "invalid argument: ", leaseCalls{
			"TryAcquire": func(ctx context.Context) (*core.Lease, error) { return bad.s.TryAcquire(ctx, bad.n) },
			"Acquire":    func(ctx context.Context) (*core.Lease, error) { return bad.s.Acquire(ctx, bad.n) },
		})
	}
	if _, err := c.Semaphore(n, 0).Available(ctx); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Available of a semaphore of 0 permits: got %v, want ErrInvalid", err)
	}
	for _, p := range []int{0, -1} {
		if err := c.Semaphore(n, 3).SetPermits(ctx, p); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("SetPermits(%d): got %v, want ErrInvalid", p, err)
		}
	}
	for _, p := range []int{0, -1, core.MaxSemaphorePermits + 1} {
		if _, err := c.Semaphore(n, 3).TrySetPermits(ctx, p); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("TrySetPermits(%d): got %v, want ErrInvalid", p, err)
		}
	}
	// -3 of the 3 it was made with: refused by the servers, which write nothing.
	for _, d := range []int{0, -3, core.MaxSemaphorePermits + 1, -core.MaxSemaphorePermits - 1} {
		if err := c.Semaphore(n, 3).AddPermits(ctx, d); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("AddPermits(%d) of 3: got %v, want ErrInvalid", d, err)
		}
	}
	if err := c.Semaphore(n, 0).AddPermits(ctx, 1); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("AddPermits of a semaphore of 0 permits: got %v, want ErrInvalid", err)
	}
	if _, _, err := c.Semaphore(n, 0).DrainPermits(ctx); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("DrainPermits of a semaphore of 0 permits: got %v, want ErrInvalid", err)
	}
	for i := range e.addrs {
		if k, _ := e.admin(t, i).Exists(ctx, semKeys(n)...).Result(); k != 0 {
			t.Errorf("node %d: bad input wrote %d keys", i, k)
		}
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

// testSemaphoreByID extends and releases a lease's permits from another
// Client by its permit ID, and refuses, writing nothing, what is not one.
func testSemaphoreByID(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l, err := e.client(t, patient).Semaphore(n, 3, core.WithTTL(time.Second)).TryAcquire(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	other := e.client(t, patient).Semaphore(n, 3)
	if err := other.Extend(ctx, l.ID(), time.Hour); err != nil {
		t.Fatalf("Extend by permit ID: %v", err)
	}
	// A round returns once a majority answered: a straggler's acquisition
	// may land after the Extend, on a tolerated minority of nodes.
	var short []string
	for i := range e.addrs {
		if left := e.admin(t, i).PTTL(ctx, semKey(n, "")).Val(); left < 50*time.Minute {
			short = append(short, fmt.Sprintf("node %d: %v", i, left))
		}
	}
	if len(short) > e.tolerated() {
		t.Fatalf("the permits expire soon after Extend(1h) by ID: %v", short)
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
	for _, bad := range []string{"", "2", "2-", "0-" + id[2:], "-1-" + id[2:], "2-" + strings.ToLower(id[2:]), "2-" + id[2:] + "A", "x-" + id[2:], "501-" + id[2:]} {
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
	// Earlier versions took up to 500 permits at once: their leases'
	// IDs stay valid past MaxSemaphoreAcquire.
	if err := s.Release(ctx, "300-"+id[2:]); !errors.Is(err, core.ErrNotHeld) {
		t.Errorf("Release of a 300-permit ID: got %v, want ErrNotHeld", err)
	}
}
