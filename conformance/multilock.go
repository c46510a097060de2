package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

func runMultiLock(t *testing.T, e env) {
	cases := map[string]func(*testing.T, env){
		"DoneWaiterTakesNothing":  testDoneWaiterTakesNothing("MultiLock"),
		"AllOrNothing":            testMultiAllOrNothing,
		"SortedOrder":             testMultiSortedOrder,
		"ReleasesPartial":         testMultiReleasesPartial,
		"NoDeadlock":              testMultiNoDeadlock,
		"BadInput":                testMultiBadInput,
		"ExclusiveWithMutex":      testMultiExclusiveWithMutex,
		"LeaseCoversAllNames":     testMultiLeaseCoversAll,
		"LockWaitsForAll":         testMultiLockWaitsForAll,
		"History":                 testMultiLockHistory,
		"LateExtendCannotShorten": testLateExtendCannotShorten("MultiLock"),
		"ReentryFailedKeepsHold":  testReentryFailedKeepsHold("MultiLock"),
	}
	maps.Copy(cases, randomFaults(e, "MultiLock"))
	maps.Copy(cases, leaseCheckCases(e, "MultiLock"))
	maps.Copy(cases, hostile(e, "MultiLock"))
	if e.strategy == core.Poll { // a read; the wait strategy plays no part
		cases["State"] = testMultiLockState
	}
	if len(e.addrs) >= 3 && e.strategy == core.Notify {
		// Where waiters queue, and a refused waiter leaves the lines of
		// the nodes that refused it while its next attempt starts.
		cases["GiveUps"] = testMultiGiveUps
	}
	if len(e.addrs) >= 3 {
		cases["StalledRounds"] = testStalledRounds("MultiLock")
		cases["QuorumOfNodesWithAll"] = testMultiQuorum
		cases["LateUndoSparesGrant"] = testLateUndoSparesGrant("MultiLock")
	}
	// Not on a cluster, where a MultiLock takes its names one by one
	// (MutexAcquire), which the case does not hold back.
	if !e.cluster {
		cases["LateAttemptAfterGiveUp"] = testLateAttemptAfterGiveUp("MultiLock")
		cases["HostileLineMultiReleaseWritesNothing"] = testHostileLineMultiReleaseWritesNothing
		if len(e.addrs) >= 3 {
			maps.Copy(cases, landsLateCasesFor(e, "MultiLock", ""))
		}
	}
	if e.strategy == core.Notify && !e.cluster {
		cases["LostGiveBackRetried"] = testMultiLostGiveBackRetried
		if len(e.addrs) == 1 { // on more, a node that missed the grant is left by a leave of each name, which writes
			cases["HostileTicketsReleaseWritesNothing"] = testHostileTicketsMultiReleaseWritesNothing
		}
	}
	if e.eavesdropped() {
		cases["ForgedWakesIgnored"] = testForgedWakesIgnored("MultiLock")
		cases["OwnerForgedWakesIgnored"] = testForgedWakesIgnored("MultiLockOwned")
	}
	if e.redialed() {
		cases["ReconnectingWaiterServed"] = testReconnectingWaiterServed("MultiLock")
		cases["ReconnectingOwnedWaiterServed"] = testReconnectingWaiterServed("MultiLockOwned")
		cases["ReconnectingHolderChecks"] = testReconnectingHolderChecksOf("MultiLock")
		cases["LateSubscriptionWaiterServed"] = testLateSubscriptionWaiterServed("MultiLock")
	}
	if e.strategy == core.Notify && e.cluster {
		cases["MarkSparesLiveWaiter"] = testMultiMarkSparesLiveWaiter
	}
	if e.strategy == core.Notify {
		cases["OwnerServedInOrder"] = testMultiOwnerServedInOrder
		cases["OwnerLeaverPassesOn"] = testMultiOwnerLeaverPassesOn
		cases["OwnerLostWake"] = testMultiOwnerLostWake
		cases["OwnerCopiedWake"] = testMultiOwnerCopiedWake
		cases["OwnerMovesOnPassesOn"] = testMultiOwnerMovesOnPassesOn
		// On servers of its own: standalone ones start in milliseconds, a
		// Cluster in seconds.
		if !e.cluster && e.server != "miniredis" && e.h.OpenAs != nil || e.cluster && isRedis(e.server) && os.Getenv("REDLOCK_LONG") == "1" {
			cases["OwnerWokenWithoutEvents"] = testMultiOwnerWokenWithoutEvents
		}
	}
	if e.strategy == core.Notify && len(e.addrs) >= 3 {
		cases["OwnedJoinLandsDuringLaterLease"] = testOwnedJoinLandsDuringLaterLease("MultiLockOwned", faults.Delay)
		cases["OwnedJoinCopyLandsDuringLaterLease"] = testOwnedJoinLandsDuringLaterLease("MultiLockOwned", faults.Duplicate)
	}
	if e.strategy == core.Notify && !e.cluster && len(e.addrs) >= 3 {
		cases["MarkSparesWaiterAfterNodeError"] = testMultiMarkSparesWaiterAfterNodeError
		cases["OvertakenJoinLandsLate"] = testOvertakenJoinLandsLate("MultiLock")
		cases["WonPassesOnOldGrant"] = testMultiWonPassesOnOldGrant
		cases["GrantAfterUnlock"] = testMultiGrantAfterUnlock
		cases["LateMoveLeave"] = testMultiLateMoveLeave
	}
	runCases(t, e, cases)
}

// multiNames returns k names that sort in the order returned. In a cluster
// cell they are picked so that they live on as many masters as there are
// (up to k): a MultiLock there must work across slots.
func (e env) multiNames(t *testing.T, ctx context.Context, k int) []string {
	base := name(t)
	names := make([]string, k)
	seen := map[string]bool{}
	var cc *redis.ClusterClient
	if e.cluster {
		cc = e.admin(t, 0).(*redis.ClusterClient)
	}
	for i := range names {
		for try := 0; ; try++ {
			names[i] = fmt.Sprintf("%s/%d-%s", base, i, rand.Text()[:4])
			if cc == nil || len(seen) >= 3 || try >= 100 {
				break
			}
			m, err := cc.MasterForKey(ctx, lockKey(names[i]))
			if err != nil {
				t.Fatal(err)
			}
			if addr := m.Options().Addr; !seen[addr] {
				seen[addr] = true
				break
			}
		}
	}
	if e.cluster {
		keys := make([]string, k)
		for i, n := range names {
			keys[i] = lockKey(n)
		}
		if got := e.masters(t, ctx, keys...); got < min(k, 3) {
			t.Fatalf("the names live on %d masters, want %d", got, min(k, 3))
		}
	}
	return names
}

// onNodesAfter is onNodes once it is 0, or after two seconds: a release
// or an undo returns once a majority answered, and the others' may land
// later (see the package documentation on stalled nodes).
func (e env) onNodesAfter(t testing.TB, ctx context.Context, key string) int {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		if n := e.onNodes(t, ctx, key); n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// onNodes counts the nodes where key exists.
func (e env) onNodes(t testing.TB, ctx context.Context, key string) int {
	t.Helper()
	n := 0
	for i := range e.addrs {
		v, err := e.admin(t, i).Exists(ctx, key).Result()
		if err != nil {
			t.Fatalf("EXISTS %s on node %d: %v", key, i, err)
		}
		n += int(v)
	}
	return n
}

// reversed returns names in the opposite order, so that a MultiLock is
// never given them sorted.
func reversed(names []string) []string {
	r := slices.Clone(names)
	slices.Reverse(r)
	return r
}

// testMultiAllOrNothing holds one of three names, the first, the middle
// or the last, and tries a MultiLock over all three, plain and of an
// owner (which takes the names one by one): refused, it leaves none
// held, and takes all once the name is free.
func testMultiAllOrNothing(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	for _, at := range []int{0, 1, 2} {
		for _, owner := range []string{"", "a"} {
			t.Run(fmt.Sprintf("held%d/owner=%q", at, owner), func(t *testing.T) {
				multiAllOrNothing(t, ctx, e, at, owner)
			})
		}
	}
}

func multiAllOrNothing(t *testing.T, ctx context.Context, e env, at int, owner string) {
	ns := e.multiNames(t, ctx, 3)
	held := mustLock(t, ctx, e.client(t).Mutex(ns[at], core.WithOwner("holder")).TryLock)
	var opts []core.Option
	if owner != "" {
		opts = append(opts, core.WithOwner(owner))
	}
	ml := e.client(t).MultiLock(reversed(ns), opts...)
	if l, err := ml.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) || l != nil {
		t.Fatalf("TryLock with one name held: got (%v, %v), want ErrNotAcquired", l, err)
	}
	other := e.client(t)
	for i, n := range ns {
		if i == at {
			continue
		}
		// A node whose answer the refusal did not wait for is undone when
		// it answers.
		if k := e.onNodesAfter(t, ctx, lockKey(n)); k != 0 {
			t.Fatalf("%s is held on %d nodes 2s after a failed MultiLock", n, k)
		}
		l, err := other.Mutex(n).TryLock(ctx)
		if err != nil {
			t.Fatalf("Mutex %s after a failed MultiLock: %v", n, err)
		}
		l.Unlock(ctx)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := ml.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with every name free: %v", err)
	}
	for _, n := range ns {
		if _, err := other.Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("Mutex %s under a MultiLock: got %v, want ErrNotAcquired", n, err)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range ns {
		l, err := other.Mutex(n).TryLock(ctx)
		if err != nil {
			t.Fatalf("Mutex %s after the MultiLock's Unlock: %v", n, err)
		}
		l.Unlock(ctx)
	}
}

// testMultiSortedOrder holds the lowest name: an attempt in sorted order
// stops there, whatever order the names were given in, and never touches
// the others (their fencing counters, made at a grant, do not exist).
func testMultiSortedOrder(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	ns := e.multiNames(t, ctx, 3)
	ml := e.client(t).MultiLock([]string{ns[1], ns[2], ns[0]})
	if got := ml.Names(); !slices.Equal(got, ns) {
		t.Fatalf("Names: got %q, want them sorted: %q", got, ns)
	}
	held := mustLock(t, ctx, e.client(t).Mutex(ns[0]).TryLock)
	defer held.Unlock(ctx)
	// TryLock returns once a majority granted: wait for the others.
	for deadline := time.Now().Add(2 * time.Second); e.onNodes(t, ctx, lockKey(ns[0])) < len(e.addrs) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := ml.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock with the lowest name held: got %v, want ErrNotAcquired", err)
	}
	for _, n := range ns[1:] {
		if k := e.onNodes(t, ctx, fenceKey(n)); k != 0 {
			t.Fatalf("%s was tried (its fencing counter exists on %d nodes) although a lower name was held", n, k)
		}
	}
}

// testMultiReleasesPartial holds the highest name: an attempt must end
// holding none of the others. On a cluster it takes them one by one first
// and gives them back; on one server it checks every name in one script
// and takes none of them, so their fencing counters never come to exist.
func testMultiReleasesPartial(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	ns := e.multiNames(t, ctx, 3)
	held := mustLock(t, ctx, e.client(t).Mutex(ns[2]).TryLock)
	defer held.Unlock(ctx)
	if _, err := e.client(t).MultiLock(reversed(ns)).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock with the highest name held: got %v, want ErrNotAcquired", err)
	}
	taken := 0 // nodes where the lower names were taken before the refusal
	if e.cluster {
		taken = len(e.addrs)
	}
	for _, n := range ns[:2] {
		if k := e.onNodes(t, ctx, fenceKey(n)); k != taken {
			t.Fatalf("%s has a fencing counter on %d of %d nodes, want %d: one script per name takes it (a cluster), one script for all does not", n, k, len(e.addrs), taken)
		}
		if k := e.onNodes(t, ctx, lockKey(n)); k != 0 {
			t.Fatalf("%s is still held on %d nodes after the attempt failed", n, k)
		}
	}
	if err := held.Extend(ctx, 5*time.Second); err != nil {
		t.Fatalf("the holder of the highest name lost it to the failed attempt: %v", err)
	}
}

// testMultiNoDeadlock has four Clients lock overlapping triples of five
// names, each given in its own order, over and over: all must finish, and
// no name may be held by two of them at once.
func testMultiNoDeadlock(t *testing.T, e env) {
	ctx := ctxFor(t, 60*time.Second)
	rounds := 10
	if e.h.Driver == "goredis" && e.strategy == core.Poll {
		rounds = 50
	}
	ns := e.multiNames(t, ctx, 5)
	var inUse [5]atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		idx := []int{(i + 2) % 5, i, (i + 1) % 5} // overlapping, never sorted the same way
		if i%2 == 1 {
			slices.Reverse(idx)
		}
		var names []string
		for _, j := range idx {
			names = append(names, ns[j])
		}
		ml := e.client(t).MultiLock(names, core.WithTTL(5*time.Second))
		wg.Go(func() {
			for range rounds {
				l, err := ml.Lock(ctx)
				if err != nil {
					errs <- fmt.Errorf("client %d: Lock: %w (a deadlock would end here at the deadline)", i, err)
					return
				}
				for _, j := range idx {
					if !inUse[j].CompareAndSwap(false, true) {
						errs <- fmt.Errorf("client %d: %s is held by another MultiLock too", i, ns[j])
					}
				}
				time.Sleep(time.Millisecond)
				for _, j := range idx {
					inUse[j].Store(false)
				}
				if err := l.Unlock(ctx); err != nil {
					errs <- fmt.Errorf("client %d: Unlock: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testMultiBadInput(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	ns := e.multiNames(t, ctx, 2)
	c := e.client(t)
	many := []string{ns[0]}
	for i := range core.MaxMultiLockNames {
		many = append(many, fmt.Sprintf("%s/%d", ns[1], i))
	}
	for _, bad := range []struct {
		what, says string
		m          *core.MultiLock
		ctx        context.Context
	}{
		{"no names", "no names", c.MultiLock(nil), ctx},
		{"an empty list", "no names", c.MultiLock([]string{}), ctx},
		{"an empty name", "empty", c.MultiLock([]string{ns[0], ""}), ctx},
		{"a name given twice", "twice", c.MultiLock([]string{ns[0], ns[1], ns[0]}), ctx},
		{"more than MaxMultiLockNames names", "too many", c.MultiLock(many), ctx},
		{"a zero TTL", "TTL", c.MultiLock(ns, core.WithTTL(0)), ctx},
		{"a nil context", "context", c.MultiLock(ns), nil},
	} {
		expectInvalid(t, bad.ctx, bad.what, bad.says, leaseCalls{"TryLock": bad.m.TryLock, "Lock": bad.m.Lock})
	}
	for _, n := range ns {
		for _, k := range []string{lockKey(n), fenceKey(n)} {
			if on := e.onNodes(t, ctx, k); on != 0 {
				t.Errorf("bad input wrote %s on %d nodes", k, on)
			}
		}
	}
}

// testMultiExclusiveWithMutex checks that a MultiLock and a Mutex over a
// shared name exclude each other, and that fencing tokens increase across
// both: the MultiLock's token exceeds every earlier token of any of its
// names, and a later token of any of them exceeds it, even of a name whose
// counter was behind.
func testMultiExclusiveWithMutex(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	ns := e.multiNames(t, ctx, 2)
	mc, mlc := e.client(t), e.client(t)
	var last uint64
	for range 3 { // puts the first name's counter ahead of the second's
		l := mustLock(t, ctx, mc.Mutex(ns[0]).TryLock)
		last = l.Token()
		l.Unlock(ctx)
	}
	ml := mlc.MultiLock(ns)
	l := mustLock(t, ctx, ml.TryLock)
	if l.Token() <= last {
		t.Fatalf("MultiLock token %d is not above the Mutex token %d of one of its names", l.Token(), last)
	}
	for _, n := range ns {
		if _, err := mc.Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("Mutex %s under a MultiLock: got %v, want ErrNotAcquired", n, err)
		}
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	m := mustLock(t, ctx, mc.Mutex(ns[1]).TryLock)
	if m.Token() <= l.Token() {
		t.Fatalf("Mutex %s token %d after the MultiLock's %d: not increasing", ns[1], m.Token(), l.Token())
	}
	if _, err := ml.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("MultiLock with a Mutex on one of its names: got %v, want ErrNotAcquired", err)
	}
	if err := m.Unlock(ctx); err != nil {
		t.Fatalf("the Mutex was touched by the failed MultiLock: %v", err)
	}
}

// testMultiLeaseCoversAll extends and releases every name, and loses the
// lease when one name is gone.
func testMultiLeaseCoversAll(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	ns := e.multiNames(t, ctx, 3)
	// The short TTL is for the sleep past it below; the node timeout it
	// implies (TTL/10) is not what this case is about.
	ml := e.client(t).MultiLock(ns, core.WithTTL(500*time.Millisecond), core.WithNodeTimeout(250*time.Millisecond))
	l, err := ml.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, 3*time.Second); err != nil {
		t.Fatalf("Extend: %v", err)
	}
	time.Sleep(600 * time.Millisecond) // past the first TTL: only the extension keeps the names
	other := e.client(t)
	for _, n := range ns {
		if _, err := other.Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("Mutex %s under an extended MultiLock: got %v, want ErrNotAcquired", n, err)
		}
	}
	for i := range e.addrs {
		e.admin(t, i).Del(ctx, lockKey(ns[1]))
	}
	if err := l.Extend(ctx, 3*time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Extend with one name deleted: got %v, want ErrLost", err)
	}
	<-l.Done()
	if err := l.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock of a lost MultiLock lease: got %v, want ErrLost", err)
	}
	for _, n := range ns {
		if k := e.onNodesAfter(t, ctx, lockKey(n)); k != 0 {
			t.Fatalf("%s is held on %d nodes after Unlock of the lost lease", n, k)
		}
	}
	l, err = ml.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	for _, n := range ns {
		if k := e.onNodesAfter(t, ctx, lockKey(n)); k != 0 {
			t.Fatalf("%s is held on %d nodes after Unlock", n, k)
		}
	}
}

// testMultiLockWaitsForAll blocks a MultiLock on two of its names held by
// Mutexes with a 10s TTL. When the first is released, the waiter must move
// on to wait for the second, and acquire within wokenWithin of its release:
// under Notify that takes the second name's event, under Poll the backoff.
func testMultiLockWaitsForAll(t *testing.T, e env) {
	ctx := ctxFor(t, 20*time.Second)
	ns := e.multiNames(t, ctx, 3)
	first := mustLock(t, ctx, e.client(t).Mutex(ns[0]).Lock)
	last := mustLock(t, ctx, e.client(t).Mutex(ns[2]).Lock)
	got := startLock(ctx, e.client(t).MultiLock(reversed(ns)).Lock)
	time.Sleep(200 * time.Millisecond)
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		t.Fatalf("the MultiLock returned (%v) while one of its names was held", r.err)
	case <-time.After(300 * time.Millisecond):
	}
	start := time.Now()
	if err := last.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := expectWoken(t, got, start)
	if l.Token() <= last.Token() || l.Token() <= first.Token() {
		t.Errorf("the MultiLock's token %d is not above the Mutexes' %d and %d", l.Token(), first.Token(), last.Token())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}

// testMultiQuorum: a MultiLock holds when a majority of nodes granted every
// name. One name held elsewhere on a majority fails it, and the nodes that
// granted all give them back; held on one node only, it holds, and leaves
// that holder's key alone.
func testMultiQuorum(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	ns := e.multiNames(t, ctx, 2)
	nodes := len(e.addrs)
	majority := nodes/2 + 1
	for i := nodes - majority; i < nodes; i++ {
		e.admin(t, i).Set(ctx, lockKey(ns[1]), "someone-else", 10*time.Second)
	}
	ml := e.client(t).MultiLock(ns)
	if _, err := ml.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock with a name held on %d of %d nodes: got %v, want ErrNotAcquired", majority, nodes, err)
	}
	// A node the vote did not wait for (slow under load) is undone when
	// it answers: within 2s, well before the 10s TTL.
	deadline := time.Now().Add(2 * time.Second)
	for i := range nodes - majority {
		for _, n := range ns {
			for v, _ := e.admin(t, i).Exists(ctx, lockKey(n)).Result(); v != 0; v, _ = e.admin(t, i).Exists(ctx, lockKey(n)).Result() {
				if time.Now().After(deadline) {
					t.Fatalf("node %d still holds %s 2s after the failed attempt", i, n)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	for i := nodes - majority; i < nodes-1; i++ {
		e.admin(t, i).Del(ctx, lockKey(ns[1]))
	}
	l, err := ml.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with a name held on one of %d nodes: %v", nodes, err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock: %v", err)
	}
	if v, _ := e.admin(t, nodes-1).Get(ctx, lockKey(ns[1])).Result(); v != "someone-else" {
		t.Fatalf("the MultiLock touched the other holder's key on node %d (now %q)", nodes-1, v)
	}
}
