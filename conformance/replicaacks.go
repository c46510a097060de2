package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testReplicaAcks: on one master with a replica of its own, paused
// (SIGSTOP: its link stays up, so the master still counts it), nothing the
// replica did not take counts: a TryLock fails with ErrReplicasBehind (not
// ErrNoQuorum: the master answered) and leaves the key nowhere, a Lock
// waits that out until its context ends, an Extend fails with
// ErrReplicasBehind and the lease keeps its old end, and under Notify a
// waiter granted the lock by a release does not return until the replica
// took the grant. Once the replica runs again, each goes through, and the
// replica holds what the master holds.
func testReplicaAcks(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	pair := ownServers(t, ctx, e, 0)
	master, replica := pair.Masters[0], pair.Replicas[0]
	m, r := plain(t, master), plain(t, replica)
	// A second for a node: a replica resumed on a loaded machine acknowledges late.
	a, b := e.ownClient(t, pair, 10*time.Second), e.ownClient(t, pair, 10*time.Second)
	paused := func(f func()) {
		t.Helper()
		if err := pair.Pause(replica); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := pair.Resume(replica); err != nil {
				t.Fatal(err)
			}
		}()
		f()
	}

	paused(func() {
		l, err := a.Mutex(n).TryLock(ctx)
		if l != nil || !errors.Is(err, core.ErrReplicasBehind) || errors.Is(err, core.ErrNoQuorum) {
			t.Fatalf("TryLock with the replica paused: got (%v, %v), want ErrReplicasBehind alone: a failover would lose the grant", l, err)
		}
		if !strings.HasPrefix(err.Error(), core.ErrReplicasBehind.Error()) {
			t.Errorf("TryLock's error does not open with what fell short: %v", err)
		}
		wait, cancel := cancelledAfter(ctx, 1500*time.Millisecond) // past one attempt's node timeout
		defer cancel()
		if l, err := a.Mutex(n).Lock(wait); l != nil || !errors.Is(err, context.Canceled) || !errors.Is(err, core.ErrReplicasBehind) {
			t.Fatalf("Lock with the replica paused: got (%v, %v), want context.Canceled joined with ErrReplicasBehind", l, err)
		}
		if !eventually(2*time.Second, func() bool { return m.Exists(ctx, lockKey(n)).Val() == 0 }) {
			t.Error("the failed TryLock left its key on the master")
		}
	})
	l, err := a.Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock with the replica running: %v", err)
	}
	if got := r.Exists(ctx, lockKey(n)).Val(); got != 1 {
		t.Fatal("TryLock returned a lease that the replica does not hold")
	}
	until := l.Until()
	paused(func() {
		if err := l.Extend(ctx, 20*time.Second); !errors.Is(err, core.ErrReplicasBehind) {
			t.Fatalf("Extend with the replica paused: got %v, want ErrReplicasBehind: a failover would lose the longer TTL", err)
		}
		if !l.Until().Equal(until) || l.Err() != nil {
			t.Fatalf("after the Extend that fell short the lease ends at %v (%v), want %v", l.Until(), l.Err(), until)
		}
	})
	if err := l.Extend(ctx, 20*time.Second); err != nil {
		t.Fatalf("Extend with the replica running: %v", err)
	}
	if ttl := r.PTTL(ctx, lockKey(n)).Val(); ttl <= 10*time.Second {
		t.Fatalf("the replica's key has %v left after a 20s Extend", ttl)
	}
	if e.strategy != core.Notify {
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		return
	}
	got := make(chan error, 1)
	go func() {
		w, err := b.Mutex(n).Lock(ctx)
		if err == nil {
			defer w.Unlock(context.WithoutCancel(ctx))
			if r.Exists(ctx, lockKey(n)).Val() != 1 {
				err = errors.New("its lease is not on the replica")
			}
		}
		got <- err
	}()
	if !eventually(5*time.Second, func() bool { return m.ZCard(ctx, queueKey(n)).Val() == 1 }) {
		t.Fatal("the waiter did not join the line within 5s")
	}
	paused(func() {
		if err := l.Unlock(ctx); err != nil && !errors.Is(err, core.ErrNoQuorum) && !errors.Is(err, core.ErrReplicasBehind) {
			t.Fatalf("Unlock: %v", err)
		}
		select {
		case err := <-got:
			t.Fatalf("the waiter's Lock returned (%v) with the replica paused: the grant it heard is not on the replica", err)
		case <-time.After(time.Second):
		}
	})
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiter's Lock once the replica runs: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter's Lock did not return within 10s of the replica's resuming")
	}
}

// testFailoverLosesNoGrant: on a Redis Cluster of its own, one master and
// its replica, A's Lock runs while the replica is paused and its link to
// the master cut, so no grant of it reaches the replica; the master dies,
// and the replica takes over without it. A's Lock must not have returned on the lost grant: B, after
// the failover, would take the lock, with A's fencing token, while A
// holds it. A's Lock returns once it won on the new master, which has no
// replica left to wait for, and B is refused.
func testFailoverLosesNoGrant(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	lc := ownServers(t, ctx, e, 1)
	master, replica := lc.Masters[0], lc.Replicas[0]
	a, b := e.ownClient(t, lc, 10*time.Second), e.ownClient(t, lc, 10*time.Second)
	for _, c := range []*core.Client{a, b} { // each has heard from the cluster, and counted its replicas
		if err := takeAndRelease(ctx, c.Mutex(n+"/before").TryLock); err != nil {
			t.Fatal(err)
		}
	}
	// The replica, paused, would still read what the master sent before
	// its death from its socket: the master drops the link instead.
	if err := lc.Pause(replica); err != nil {
		t.Fatal(err)
	}
	if err := plain(t, master).Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica on the master: %v", err)
	}
	type result struct {
		l   *core.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := a.Mutex(n).Lock(ctx)
		got <- result{l, err}
	}()
	time.Sleep(300 * time.Millisecond) // A's grant is on the master only
	if err := lc.Kill(master); err != nil {
		t.Fatal(err)
	}
	if err := lc.Resume(replica); err != nil {
		t.Fatal(err)
	}
	if err := plain(t, replica).Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER TAKEOVER on the replica: %v", err)
	}
	promoted := time.Now()
	var la result
	select {
	case la = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("A's Lock did not return within 15s of the promotion")
	}
	if la.err != nil {
		t.Fatalf("A's Lock: %v", la.err)
	}
	defer la.l.Unlock(ctx)
	t.Logf("A's Lock returned %v after the promotion", time.Since(promoted).Round(time.Millisecond))
	var (
		lb  *core.Lease
		err error
	)
	for {
		lb, err = b.Mutex(n).TryLock(ctx)
		outage := errors.Is(err, core.ErrNoQuorum) || errors.Is(err, core.ErrUnavailable) || errors.Is(err, core.ErrReplicasBehind)
		if !outage || time.Since(promoted) > 10*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err == nil {
		defer lb.Unlock(ctx)
		t.Fatalf("B took the lock (token %d) after the failover while A holds it (token %d, %v, valid for %v): A's grant was lost with the master",
			lb.Token(), la.l.Token(), la.l.Err(), time.Until(la.l.Until()).Round(time.Millisecond))
	}
	if !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("B's TryLock after the failover: got %v, want ErrNotAcquired", err)
	}
}

// eventually reports whether cond held within d, asking every 20ms.
func eventually(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// testReplicaCounts: how a master's replicas are counted. A Client that
// counted none (the replica was detached) counts the replica once it is
// attached again, at its next count (every second). A replica that
// is paused and whose link the master dropped (INFO replication then
// counts no replica) is still waited for: it may be promoted, and the
// master did not change. Semaphore.Extend by permit ID waits as well.
func testReplicaCounts(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	pair := ownServers(t, ctx, e, 0)
	master, replica := pair.Masters[0], pair.Replicas[0]
	m, r := plain(t, master), plain(t, replica)
	replicas := func(want string) { // connected, and synced when one
		t.Helper()
		if !eventually(10*time.Second, func() bool {
			info := m.Info(ctx, "replication").Val()
			return strings.Contains(info, "connected_slaves:"+want) && (want == "0" || strings.Contains(info, "state=online"))
		}) {
			t.Fatalf("the master did not count %s connected replicas within 10s", want)
		}
	}
	if err := r.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	replicas("0")
	// The first permit must outlive two replica syncs on a loaded machine.
	a := e.clientOn(t, []string{master}, core.WithTTL(40*time.Second), core.WithNodeTimeout(300*time.Millisecond))
	s := a.Semaphore(n, 2)
	first, err := s.TryAcquire(ctx, 1) // counts no replica
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := strings.Cut(master, ":")
	if err := r.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	replicas("1")
	time.Sleep(1200 * time.Millisecond) // past the next count, at this grant
	second, err := s.TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	cutOff := func(f func()) {
		t.Helper()
		if err := pair.Pause(replica); err != nil {
			t.Fatal(err)
		}
		defer pair.Resume(replica)
		if err := m.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
			t.Fatal(err)
		}
		replicas("0")
		time.Sleep(1200 * time.Millisecond) // past the next count, which finds none connected
		f()
	}
	cutOff(func() {
		if l, err := s.TryAcquire(ctx, 1); l != nil || !errors.Is(err, core.ErrReplicasBehind) {
			t.Errorf("TryAcquire with the replica cut off: got (%v, %v), want ErrReplicasBehind", l, err)
		}
		if err := s.Extend(ctx, first.ID(), 45*time.Second); !errors.Is(err, core.ErrReplicasBehind) {
			t.Errorf("Semaphore.Extend by ID with the replica cut off: got %v, want ErrReplicasBehind", err)
		}
	})
	replicas("1")
	if !eventually(5*time.Second, func() bool { return s.Extend(ctx, first.ID(), 45*time.Second) == nil }) {
		t.Fatal("Semaphore.Extend by ID did not succeed within 5s of the replica's return")
	}
}
