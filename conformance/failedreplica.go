package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testFailedReplicaStopsGrants: on a Redis Cluster of its own, two
// masters and a replica each, the replica of the lock's master is paused
// until the cluster flags it failed, and the master drops its link. The cluster can still promote it
// (the master dies, the replica resumes), without any write the master
// takes now: an Extend and a TryLock must fail with ErrReplicasBehind,
// the lease keeping its end and the TryLock leaving no key, or a second
// client would take the lock after the promotion. Once the replica is
// back and linked, a TryLock succeeds and the replica holds it.
func testFailedReplicaStopsGrants(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	// Two masters: Redis 7.0 flags a node failed once a majority of the
	// masters found it silent, and never with one master alone.
	lc := ownServers(t, ctx, e, 2)
	// The flag takes the node timeout (15s by default): this cluster's own is short.
	for _, a := range allNodes(lc) {
		if err := plain(t, a).ConfigSet(ctx, "cluster-node-timeout", "500").Err(); err != nil {
			t.Fatal(err)
		}
	}
	mc, err := plainCluster(t, allNodes(lc)).MasterForKey(ctx, lockKey(n))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.Index(lc.Masters, mc.Options().Addr)
	if i < 0 {
		t.Fatalf("the lock's master %s is none of %v", mc.Options().Addr, lc.Masters)
	}
	replica := lc.Replicas[i]
	m, r := plain(t, lc.Masters[i]), plain(t, replica)
	onReplica := redis.NewClient(&redis.Options{Addr: replica, Protocol: 2, DisableIdentity: true,
		OnConnect: func(ctx context.Context, c *redis.Conn) error { return c.ReadOnly(ctx).Err() }})
	defer onReplica.Close()
	a := e.ownClient(t, lc, 10*time.Second)
	held := mustLock(t, ctx, a.Mutex(n).TryLock) // the Client counted the replica
	replicaID := r.ClusterMyID(ctx).Val()
	flagged := func(fail bool) func() bool {
		return func() bool {
			for line := range strings.Lines(m.ClusterNodes(ctx).Val()) {
				if f := strings.Fields(line); len(f) > 2 && f[0] == replicaID {
					return strings.Contains(","+f[2]+",", ",fail,") == fail
				}
			}
			return false
		}
	}
	if err := lc.Pause(replica); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lc.Resume(replica) }) // before the Client closes
	if !eventually(10*time.Second, flagged(true)) {
		t.Fatal("the master did not flag its paused replica failed within 10s")
	}
	if err := m.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatalf("CLIENT KILL TYPE replica on the master: %v", err)
	}
	time.Sleep(1200 * time.Millisecond) // past the Client's next count of the replicas, as a Client that locks now counts
	until := held.Until()
	if err := held.Extend(ctx, 20*time.Second); !errors.Is(err, core.ErrReplicasBehind) {
		t.Fatalf("Extend with the master's only replica flagged failed: got %v, want ErrReplicasBehind: a failover to that replica would lose the longer TTL", err)
	}
	if !held.Until().Equal(until) || held.Err() != nil {
		t.Fatalf("after the Extend that fell short the lease ends at %v (%v), want %v", held.Until(), held.Err(), until)
	}
	if err := held.Unlock(ctx); err != nil { // a release waits for no replica
		t.Fatal(err)
	}
	l, err := a.Mutex(n).TryLock(ctx)
	if l != nil {
		l.Unlock(context.WithoutCancel(ctx))
		t.Fatalf("TryLock with the master's only replica flagged failed granted a lease (token %d), want ErrReplicasBehind: a failover to that replica would lose the grant", l.Token())
	}
	if !errors.Is(err, core.ErrReplicasBehind) {
		t.Fatalf("TryLock with the master's only replica flagged failed: got %v, want ErrReplicasBehind", err)
	}
	if !eventually(2*time.Second, func() bool { return m.Exists(ctx, lockKey(n)).Val() == 0 }) {
		t.Error("the failed TryLock left its key on the master")
	}

	if err := lc.Resume(replica); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool {
		info := r.Info(ctx, "replication").Val()
		return flagged(false)() && strings.Contains(r.ClusterInfo(ctx).Val(), "cluster_state:ok") &&
			strings.Contains(info, "master_link_status:up")
	}) {
		t.Fatal("the resumed replica was not linked, and known healthy to its master, within 10s")
	}
	l, err = a.Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock once the replica is back: %v", err)
	}
	defer l.Unlock(context.WithoutCancel(ctx))
	if onReplica.Exists(ctx, lockKey(n)).Val() != 1 {
		t.Fatal("TryLock returned a lease that the replica does not hold")
	}
}
