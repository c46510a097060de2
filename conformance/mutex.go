package conformance

import (
	"context"
	"errors"
	"maps"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

func runMutex(t *testing.T, e env) {
	cases := map[string]func(*testing.T, env){
		"DoneWaiterTakesNothing": testDoneWaiterTakesNothing("Mutex"),
		"LateAttemptAfterGiveUp": testLateAttemptAfterGiveUp("Mutex"),
		"Exclusive":              testExclusive,
		"LockWaitsForRelease":    testLockWaitsForRelease,
		"ContextEndsWait":        testContextEndsWait,
		"ExpiryLosesLease":       testExpiryLosesLease,
		"Extend":                 testExtend,
		"AutoExtend":             testAutoExtend,
		"Reentrant":              testReentrant,
		"Do":                     testDo,
		"FencingIncreases":       testFencingIncreases,
		"History":                testMutexHistory,
		"State":                  testMutexState,
	}
	maps.Copy(cases, partialFailureMutexCases)
	maps.Copy(cases, metadataCases("Mutex"))
	maps.Copy(cases, forceCases(e, "Mutex", ""))
	maps.Copy(cases, forceCases(e, "MutexOwned", "Owned"))
	maps.Copy(cases, hostile(e, "Mutex"))
	maps.Copy(cases, randomFaults(e, "Mutex"))
	maps.Copy(cases, leaseCheckCases(e, "Mutex"))
	if e.strategy == core.Notify {
		cases["LostLeaveRetried"] = testLostLeaveRetried("Mutex")
		cases["ForgedGrantIgnored"] = testForgedGrantIgnored
		if e.eavesdropped() {
			cases["EavesdropperCannotForge"] = testEavesdropperCannotForge
			cases["ForgedWakesIgnored"] = testForgedWakesIgnored("Mutex")
			cases["OwnerForgedWakesIgnored"] = testForgedWakesIgnored("MutexOwned")
		}
		cases["DeletedLockTakenByTTL"] = testDeletedLockTakenByTTL
		if e.redialed() {
			cases["ReconnectingWaiterServed"] = testReconnectingWaiterServed("Mutex")
			cases["ReconnectingOwnedWaiterServed"] = testReconnectingWaiterServed("MutexOwned")
			cases["LateSubscriptionWaiterServed"] = testLateSubscriptionWaiterServed("Mutex")
			cases["ReconnectingHolderChecks"] = testReconnectingHolderChecks
			if e.eavesdropped() && len(e.addrs) <= 3 { // it starts servers of its own, as many as the cell has
				cases["EavesdropperCannotDeafen"] = testEavesdropperCannotDeafen
			}
		}
		if !e.cluster { // a Cluster's PUBLISH counts one node's listeners only
			cases["DeadWaiterPassedOver"] = testDeadWaiterPassedOver
			cases["DeadOwnerWaiterPassedOver"] = testDeadOwnerWaiterPassedOver
			cases["DeadMultiWaiterPassedOver"] = testDeadMultiWaiterPassedOver
			cases["DeadCrowdPassedOver"] = testDeadCrowdPassedOver
		}
		cases["ResumeWaiter"] = testMutexResumeWaiter
		// A TryLock's copies land alike under either strategy; the first
		// attempt of a Lock carries the waiter's token only under Notify.
		cases["CopyLandsUnderOtherHolder"] = testCopyLandsUnderOtherHolder
		cases["FirstCopyAndGrantedLease"] = testFirstCopyAndGrantedLease
		cases["TryLockCopyAfterForceUnlock"] = testTryLockCopyAfterForceUnlock
		if !e.cluster {
			cases["LateGrantIgnored"] = testLateGrantIgnored
		}
	}
	cases["IdleNameLeavesNothing"] = testIdleNameLeavesNothing
	if e.strategy == core.Poll { // every driver waits by Poll; how it waits does not matter
		cases["ObserverSeesLeases"] = testObserverSeesLeases
		cases["FencingAcrossRestarts"] = testFencingAcrossRestarts
		cases["Resume"] = testMutexResume
		cases["ExtendOrRetake"] = testMutexRetake
	}
	if !e.cluster && e.server != "miniredis" { // MONITOR, on one server
		cases["UncontendedCost"] = testUncontendedCost
		if e.strategy == core.Notify && len(e.addrs) == 1 {
			cases["HandOffCost"] = testHandOffCost
		}
	}
	// It holds back attempt k on node k-1 for a majority of nodes; a Mutex
	// waiter under Notify makes two attempts before it waits for its
	// grant (its first and the one that joins the line): three nodes.
	if len(e.addrs) == 3 || len(e.addrs) > 3 && e.strategy == core.Poll {
		cases["LateAttemptCannotShorten"] = testLateAttemptCannotShorten("Mutex")
	}
	cases["LateTryLockRefused"] = testLateTryLockRefused
	if e.strategy == core.Notify && len(e.addrs) == 3 {
		cases["HeldBackAttemptSparesLease"] = testHeldBackAttemptSparesLease("Mutex")
		cases["RotationForgetsGrants"] = testRotationForgetsGrants
		cases["SplitGrantsYieldToEarlier"] = testSplitGrantsYieldToEarlier
		cases["FirstUndoLandsLate"] = testFirstUndoLandsLate
		cases["OwnerWaiterUndoes"] = testOwnerWaiterUndoes
		cases["PartialHolderNoPolling"] = testPartialHolderNoPolling
		cases["ClosedWaiterKeepsNothing"] = testClosedWaiterKeepsNothing
		cases["LeaveBehindSparesLease"] = testLeaveBehindSparesLease
	}
	if e.strategy == core.Notify && len(e.addrs) >= 3 {
		cases["OvertakenJoinLandsLate"] = testOvertakenJoinLandsLate("Mutex")
		cases["OwnedJoinLandsDuringLaterLease"] = testOwnedJoinLandsDuringLaterLease("MutexOwned", faults.Delay)
		cases["OwnedJoinCopyLandsDuringLaterLease"] = testOwnedJoinLandsDuringLaterLease("MutexOwned", faults.Duplicate)
	}
	if len(e.addrs) >= 3 {
		maps.Copy(cases, landsLateCasesFor(e, "Mutex", ""))
		maps.Copy(cases, landsLateCasesFor(e, "MutexOwned", "Owned"))
		if e.strategy == core.Notify {
			cases["KeptGrantAfterLostRelease"] = testKeptGrantAfterLostRelease
		}
	}
	if len(e.addrs) == 3 {
		cases["FenceSurvivesLostCounter"] = testFenceSurvivesLostCounter
		// The strategy plays no part; in-process miniredis draws too few
		// tokens in the idle expiry to pass a start from the clock.
		if e.strategy == core.Poll && e.server != "miniredis" && os.Getenv("REDLOCK_LONG") == "1" {
			cases["FenceAcrossAheadClock"] = testFenceAcrossAheadClock
		}
	}
	if len(e.addrs) >= 3 {
		cases["StalledMinorityWaitsForNothing"] = testStalledMinorityWaitsForNothing
		cases["UnlockUnconfirmedNotLost"] = testUnlockUnconfirmedNotLost
		cases["StalledRounds"] = testStalledRounds("Mutex")
		cases["StalledUndoBounded"] = testStalledUndoBounded
		cases["StalledContextBounds"] = testStalledContextBounds
		cases["LateGrantAfterUnlock"] = testLateGrantAfterUnlock
	}
	runCases(t, e, cases)
	if len(e.addrs) >= 3 {
		runQuorum(t, e)
	}
}

func testExclusive(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	a, b := e.client(t).Mutex(n), e.client(t).Mutex(n)
	l, err := a.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock on a free lock: %v", err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock on a held lock: got %v, want ErrNotAcquired", err)
	}
	unlockOnce(t, ctx, l)
	nextTokenHigher(t, ctx, b.TryLock, l)
}

// nextTokenHigher takes the lock that prev held, with take, and checks
// that its fencing token is higher; then releases it.
func nextTokenHigher(t *testing.T, ctx context.Context, take func(context.Context) (*core.Lease, error), prev *core.Lease) {
	t.Helper()
	l, err := take(ctx)
	if err != nil {
		t.Fatalf("taking the lock after Unlock: %v", err)
	}
	if l.Token() <= prev.Token() {
		t.Fatalf("token %d after token %d: not increasing", l.Token(), prev.Token())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// unlockOnce checks that l's Unlock ends it, closing Done, and that a
// second Unlock finds it not held.
func unlockOnce(t *testing.T, ctx context.Context, l *core.Lease) {
	t.Helper()
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
}

func testLockWaitsForRelease(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	a, b := e.client(t).Mutex(n), e.client(t).Mutex(n)
	la := mustLock(t, ctx, a.Lock)
	got := make(chan error, 1)
	released := make(chan time.Time, 1)
	go func() {
		lb, err := b.Lock(ctx)
		if err == nil {
			select {
			case <-released:
			default:
				err = errors.New("acquired while the first lease was held")
			}
			if lb.Token() <= la.Token() {
				err = errors.New("the waiter's token is not above the first holder's")
			}
			lb.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond)
	released <- time.Now()
	if err := la.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting Lock: %v", err)
	}
}

func testContextEndsWait(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l, err := e.client(t).Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = e.client(t).Mutex(n).Lock(short)
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("Lock past its deadline: got %v, want only context.DeadlineExceeded", err)
	}
	_, err = e.client(t).Mutex(n, core.WithMaxAttempts(3)).Lock(ctx)
	if !errors.Is(err, core.ErrNotAcquired) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock out of attempts: got %v, want only ErrNotAcquired", err)
	}
}

func testExpiryLosesLease(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	// Drift factor 0.1: the validity window is TTL − 20ms − 2ms from the
	// start of the request; the request's own time is inside it.
	ttl, drift := 200*time.Millisecond, 22*time.Millisecond
	before := time.Now()
	la, err := e.client(t).Mutex(n, core.WithTTL(ttl), core.WithDriftFactor(0.1)).Lock(ctx)
	after := time.Now()
	if err != nil {
		t.Fatal(err)
	}
	if u := la.Until(); u.Before(before.Add(ttl-drift)) || u.After(after.Add(ttl-drift)) {
		t.Fatalf("Until is %v after the call, want TTL − drift (%v) from the request's start, within %v",
			u.Sub(before), ttl-drift, after.Sub(before))
	}
	select {
	case <-la.Done():
		if time.Now().Before(la.Until()) {
			t.Fatal("Done closed before the validity deadline")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Done still open a long time after the TTL")
	}
	if !errors.Is(la.Err(), core.ErrLost) {
		t.Fatalf("Err after expiry: got %v, want ErrLost", la.Err())
	}
	lb, err := e.client(t).Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after the holder expired: %v", err)
	}
	if err := la.Unlock(ctx); !errors.Is(err, core.ErrLost) || !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Unlock of an expired lease: got %v, want ErrLost (and ErrNotHeld)", err)
	}
	if err := lb.Unlock(ctx); err != nil {
		t.Fatalf("the new holder's key was touched by the expired lease's Unlock: %v", err)
	}
}

func testExtend(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l := mustLock(t, ctx, e.client(t).Mutex(n, core.WithTTL(500*time.Millisecond)).Lock)
	if err := l.Extend(ctx, 0); !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("Extend(0): got %v, want ErrInvalid", err)
	}
	if err := l.Extend(ctx, 3*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	if left := time.Until(l.Until()); left < 2*time.Second {
		t.Fatalf("Until is %v away after Extend(3s)", left)
	}
	time.Sleep(600 * time.Millisecond) // past the first TTL: only the extension keeps it
	if _, err := e.client(t).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock on an extended lock: got %v, want ErrNotAcquired", err)
	}
	for i := range e.addrs {
		e.admin(t, i).Del(ctx, lockKey(n))
	}
	other := mustLock(t, ctx, e.client(t).Mutex(n).TryLock)
	if err := l.Extend(ctx, time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Extend of a lock another owner holds: got %v, want ErrLost", err)
	}
	<-l.Done()
	if err := other.Unlock(ctx); err != nil {
		t.Fatalf("the other owner's lock was touched by a foreign Extend: %v", err)
	}
}

func testAutoExtend(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	// Long enough that one round delayed by a loaded test machine does not
	// outlast the validity left; the watchdog extends at every third.
	ttl := 600 * time.Millisecond
	m := e.client(t).Mutex(n, core.WithTTL(ttl), core.WithAutoExtend())
	l, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * ttl)
	if err := l.Err(); err != nil {
		t.Fatalf("auto-extended lease after 3 TTLs: %v", err)
	}
	asked := time.Now()
	if _, err := e.client(t).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		// The lease may have run out between Err and TryLock: a watchdog
		// late on a loaded machine, not a second owner of a valid lock.
		t.Fatalf("TryLock on an auto-extended lock: got %v, want ErrNotAcquired (the lease valid until %v after the TryLock began, lost: %v)",
			err, l.Until().Sub(asked), l.Err())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}

	// A lease whose key vanished: the watchdog notices before the deadline.
	l, err = m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadline := l.Until()
	for i := range e.addrs {
		e.admin(t, i).Del(ctx, lockKey(n))
	}
	select {
	case <-l.Done():
		if !errors.Is(l.Err(), core.ErrLost) {
			t.Fatalf("Err: got %v, want ErrLost", l.Err())
		}
	case <-time.After(time.Until(deadline)):
		t.Fatal("Done still open at the validity deadline after the key was deleted")
	}
}

func testReentrant(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.client(t)
	owned := c.Mutex(n, core.WithOwner("worker-1"))
	l1 := mustLock(t, ctx, owned.TryLock)
	l2, err := owned.TryLock(ctx)
	if err != nil {
		t.Fatalf("re-entry by the same owner: %v", err)
	}
	if l2.Token() <= l1.Token() {
		t.Fatalf("re-entry token %d not above %d", l2.Token(), l1.Token())
	}
	for _, m := range []*core.Mutex{c.Mutex(n, core.WithOwner("worker-2")), e.client(t).Mutex(n)} {
		if _, err := m.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("TryLock by another owner: got %v, want ErrNotAcquired", err)
		}
	}
	if err := l1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client(t).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock with one hold left: got %v, want ErrNotAcquired", err)
	}
	if err := l2.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l3, err := e.client(t).Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock after the last hold was released: %v", err)
	}
	l3.Unlock(ctx)
}

func testDo(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	m := e.client(t).Mutex(n, core.WithTTL(600*time.Millisecond))
	ran := false
	err := core.Do(ctx, m, func(ctx context.Context) error {
		ran = true
		time.Sleep(time.Second) // longer than the TTL: the watchdog extends
		if _, err := e.client(t).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			return errors.New("the lock was free inside Do")
		}
		return ctx.Err()
	})
	if err != nil || !ran {
		t.Fatalf("Do: ran=%v err=%v", ran, err)
	}
	l, err := e.client(t).Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock after Do: %v", err)
	}
	l.Unlock(ctx)

	// The function's context ends when the lock is lost.
	err = core.Do(ctx, m, func(fctx context.Context) error {
		for i := range e.addrs {
			e.admin(t, i).Del(ctx, lockKey(n))
		}
		<-fctx.Done()
		return context.Cause(fctx)
	})
	if !errors.Is(err, core.ErrLost) {
		t.Fatalf("Do after the key was deleted: got %v, want ErrLost", err)
	}
}

// testFencingAcrossRestarts takes and releases the lock for a second with
// counters that live 40ms (WithIdleExpiry): the uncontended draw renews
// its counter only every 64th token, so each starts again from the
// server's clock about every 40ms while the name is in use, and the
// tokens must still increase, on one node and across a quorum whose
// counters start again at different times. A node too slow to answer on
// a loaded machine (ErrNoQuorum, or the name held a moment by a late
// attempt: ErrNotAcquired, with a 300ms TTL) costs a cycle, not the case.
func testFencingAcrossRestarts(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	m := e.client(t, core.WithIdleExpiry(40*time.Millisecond), core.WithTTL(300*time.Millisecond)).Mutex(n)
	var last uint64
	restarts := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		l, err := m.TryLock(ctx)
		if errors.Is(err, core.ErrNoQuorum) || errors.Is(err, core.ErrNotAcquired) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if l.Token() <= last {
			t.Fatalf("token %d after %d: fencing went backwards when a counter started again", l.Token(), last)
		}
		if last > 0 && l.Token()-last > 1024 { // a start from the clock: ms × 1024
			restarts++
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil && !errors.Is(err, core.ErrNoQuorum) {
			t.Fatal(err)
		}
	}
	if restarts < 3 {
		t.Fatalf("the counters started again %d times in a second of use, want at least 3 with a 40ms idle expiry and a renewal every 64 tokens", restarts)
	}
}

// testFencingIncreases takes the lock 1,000 times (e.ops) from competing Clients:
// while a lease is held, its token must exceed every token seen before.
// ErrNoQuorum, a node slow to answer on a loaded machine, is no failure
// here: the Lock is tried again, and a lease whose release it hit expires.
func testFencingIncreases(t *testing.T, e env) {
	ctx, n := ctxFor(t, 60*time.Second), name(t)
	const clients = 4
	total := e.ops(1000)
	var (
		mu    sync.Mutex
		last  uint64
		taken int
		wg    sync.WaitGroup
	)
	errs := make(chan error, clients)
	for range clients {
		m := e.client(t).Mutex(n, core.WithTTL(5*time.Second))
		wg.Go(func() {
			for {
				l, err := m.Lock(ctx)
				if errors.Is(err, core.ErrNoQuorum) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				done := taken >= total
				if !done && l.Token() <= last {
					errs <- errors.New("fencing token did not increase")
				}
				last, taken = l.Token(), taken+1
				mu.Unlock()
				if err := l.Unlock(ctx); err != nil && !errors.Is(err, core.ErrNoQuorum) {
					errs <- err
					return
				}
				if done {
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
}
