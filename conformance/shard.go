package conformance

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testHandOffsStayInShard: on a Redis Cluster a release tells its waiter
// on a channel sharded with the lock (SPUBLISH), which stays in the lock's
// shard, where a classic PUBLISH goes to every node. On a cluster of its
// own, of two masters with a replica each, hand-offs send the other
// master and its replica nothing. Then the lock's slot moves to the other
// master while a waiter waits: its Client subscribes the channel there,
// and the hand-off sends the old shard nothing.
func testHandOffsStayInShard(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	lc := ownServers(t, ctx, e, 2)
	holder, waiter := e.ownClient(t, lc, 20*time.Second), e.ownClient(t, lc, 20*time.Second)
	cc := plainCluster(t, allNodes(lc))
	slot, here, there := slotOf(t, ctx, cc, lockKey(n))
	shardOf := func(master *redis.Client) []string { // the master and its replica
		i := slices.Index(lc.Masters, master.Options().Addr)
		return []string{lc.Masters[i], lc.Replicas[i]}
	}

	// queued starts the waiter's Lock while the holder holds, and returns
	// once the waiter's sharded channel is subscribed on owner.
	queued := func(owner *redis.Client) (*core.Lease, <-chan locked) {
		t.Helper()
		held := mustLock(t, ctx, holder.Mutex(n).Lock)
		got := startLock(ctx, waiter.Mutex(n).Lock)
		if !eventually(10*time.Second, func() bool { return shardSubscribed(ctx, owner, n) }) {
			t.Fatalf("the waiter's sharded channel was not subscribed on the lock's master %s within 10s", owner.Options().Addr)
		}
		return held, got
	}

	const handOffs = 5
	outside := shardOf(there)
	before := publishesReceived(t, ctx, outside)
	for range handOffs {
		held, got := queued(here)
		handOff(t, ctx, held, got, 5*time.Second)
	}
	if sent := publishesReceived(t, ctx, outside) - before; sent != 0 {
		t.Errorf("%d hand-offs sent %d classic PUBLISH messages to the nodes outside the lock's shard (%v); want none", handOffs, sent, outside)
	}

	held, got := queued(here)
	moved := time.Now()
	migrate(t, ctx, slot, here, there, lockKey(n))
	if err := finishMigration(ctx, cc, slot, here, there); err != nil {
		t.Fatal(err)
	}
	if !eventually(10*time.Second, func() bool { return shardSubscribed(ctx, there, n) }) {
		t.Fatalf("the waiter's sharded channel was not subscribed on the lock's new master %s within 10s of the slot's move", there.Options().Addr)
	}
	t.Logf("the waiter's sharded channel was subscribed on the new master %v after the slot's move began", time.Since(moved).Round(time.Millisecond))
	outside = shardOf(here)
	before = publishesReceived(t, ctx, outside)
	handOff(t, ctx, held, got, 5*time.Second)
	if sent := publishesReceived(t, ctx, outside) - before; sent != 0 {
		t.Errorf("the hand-off after the slot moved sent %d classic PUBLISH messages to the nodes outside its new shard (%v); want none", sent, outside)
	}
}

// shardSubscribed reports whether the sharded channel of a waiter in the
// line of the Mutex called name (the part of its ticket key before ":t:",
// ":c:" and its Client's id) has a subscriber on master.
func shardSubscribed(ctx context.Context, master *redis.Client, name string) bool {
	tickets, err := master.ZRange(ctx, queueKey(name), 0, -1).Result()
	if err != nil || len(tickets) == 0 {
		return false
	}
	stem, id, ok := ticketParts(tickets[0])
	if !ok {
		return false
	}
	counts, err := master.Do(ctx, "PUBSUB", "SHARDNUMSUB", shardChannel(stem, id)).Slice()
	return err == nil && len(counts) == 2 && counts[1] == int64(1)
}

// publishesReceived is how many classic PUBLISH messages the cluster bus
// brought the nodes at addrs, summed (CLUSTER INFO).
func publishesReceived(t *testing.T, ctx context.Context, addrs []string) int64 {
	t.Helper()
	var sum int64
	for _, a := range addrs {
		info, err := plain(t, a).ClusterInfo(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_stats_messages_publish_received:"); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				sum += n
			}
		}
	}
	return sum
}
