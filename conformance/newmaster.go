package conformance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// testNewMasterNotifies: a master that joins a Redis Cluster after the
// Client started, and takes the slot of a latch, is given the keyspace
// flags Notify needs and subscribed: a waiter on the latch wakes at the
// CountDown, not at its TTL recheck (20s here). Its server then leaves
// the cluster, and the Client stops listening to it.
func testNewMasterNotifies(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	lc := ownServers(t, ctx, e, 1)
	seeds := allNodes(lc)
	c := e.ownClient(t, lc, 20*time.Second)
	added, err := lc.AddMaster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cc := plainCluster(t, seeds)
	from, to := plain(t, lc.Masters[0]), plain(t, added)
	key := latchKey(n)
	slot := cc.ClusterKeySlot(ctx, key).Val()
	nodes := allNodes(lc)
	handOver(t, ctx, slot, from, to, nodes)
	if flags := to.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; flags != "" {
		t.Fatalf("the new master has notify-keyspace-events %q before the Client met it", flags)
	}

	l := c.Latch(n)
	if ok, err := l.TrySetCount(ctx, 1); !ok || err != nil {
		t.Fatalf("TrySetCount on the new master: (%v, %v)", ok, err)
	}
	opened := make(chan error, 1)
	go func() { opened <- l.Wait(ctx) }()
	channel := keyspaceChannel("0", key)
	if !eventually(10*time.Second, func() bool { return to.PubSubNumSub(ctx, channel).Val()[channel] > 0 }) {
		t.Fatal("the waiter's Client did not subscribe on the new master within 10s")
	}
	if flags := to.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; !strings.ContainsAny(flags, "KA") {
		t.Errorf("the new master has notify-keyspace-events %q: it publishes no keyspace events", flags)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-opened:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not wake within 5s of the CountDown: the new master's event did not reach it")
	}

	// The new master gives its slot back and leaves the cluster: the
	// Client's next subscription stops listening to it.
	handOver(t, ctx, slot, to, from, nodes)
	id := to.ClusterMyID(ctx).Val()
	for _, a := range slices.Concat(lc.Masters[:1], lc.Replicas) {
		if err := plain(t, a).Do(ctx, "CLUSTER", "FORGET", id).Err(); err != nil {
			t.Fatalf("CLUSTER FORGET on %s: %v", a, err)
		}
	}
	if err := to.Do(ctx, "CLUSTER", "RESET", "HARD").Err(); err != nil {
		t.Fatal(err)
	}
	subscribers := func() int64 { return to.PubSubNumPat(ctx).Val() + int64(len(to.PubSubChannels(ctx, "*").Val())) }
	// Each wait on a name nobody waits on subscribes; a cluster client
	// that asked the server that left for the slots (go-redis asks a
	// random node it knows) learns nothing from its empty answer, and the
	// next wait asks again.
	for i := 0; subscribers() > 0; i++ {
		if i == 20 {
			t.Fatalf("the server that left the cluster still has %d subscriptions of the Client after 20 waits", subscribers())
		}
		other := c.Mutex(fmt.Sprintf("%s/after/%d", n, i))
		held := mustLock(t, ctx, other.TryLock)
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		if _, err := other.Lock(wctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Lock while held: %v", err)
		}
		cancel()
		held.Unlock(ctx)
	}
}

// handOver gives slot, and its keys, from one master to another, and
// waits until every node of addrs says so (CLUSTER SLOTS): a client that
// reloads the slots then learns it from any node.
func handOver(t *testing.T, ctx context.Context, slot int64, from, to *redis.Client, addrs []string) {
	t.Helper()
	// The slot's keys (a latch leaves its opened mark) move as in a
	// migration: the target accepts them only while it imports the slot.
	fromID, toID := from.ClusterMyID(ctx).Val(), to.ClusterMyID(ctx).Val()
	// A master that gives its last slot away would turn into a replica of
	// the master that took it (replica migration), and could refuse the
	// SETSLOT below as one.
	if err := from.ConfigSet(ctx, "cluster-allow-replica-migration", "no").Err(); err != nil {
		t.Fatal(err)
	}
	if err := to.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := from.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := moveSlotKeys(ctx, slot, from, to); err != nil {
		t.Fatal(err)
	}
	for _, m := range []*redis.Client{to, from} {
		if err := m.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err(); err != nil {
			t.Fatalf("CLUSTER SETSLOT %d NODE on %s: %v", slot, m.Options().Addr, err)
		}
	}
	agreed := func() bool {
		for _, a := range addrs {
			c := redis.NewClient(&redis.Options{Addr: a, Protocol: 2, DisableIdentity: true})
			shards, err := c.ClusterShards(ctx).Result()
			c.Close()
			if err != nil || !slices.ContainsFunc(shards, func(s redis.ClusterShard) bool {
				return slices.ContainsFunc(s.Slots, func(r redis.SlotRange) bool { return r.Start <= slot && slot <= r.End }) &&
					slices.ContainsFunc(s.Nodes, func(n redis.Node) bool {
						return n.Role == "master" && net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10)) == to.Options().Addr
					})
			}) {
				return false
			}
		}
		return true
	}
	if !eventually(10*time.Second, agreed) {
		t.Fatalf("the cluster's nodes did not all say within 10s that slot %d is %s's", slot, to.Options().Addr)
	}
}
