package conformance

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// clusterClientTimers are goroutines a closed rueidis cluster client
// leaves behind for five seconds: after a topology refresh it closes the
// connections it replaced only then (rueidis cluster.go, _refresh and
// redirectOrNew). They end by themselves; the client's own are gone.
var clusterClientTimers = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient).redirectOrNew.func1"),
}

// The cluster cells run every primitive on a three-master Redis Cluster,
// through the driver's cluster client, as one node. What differs there:
// a primitive's keys must share one slot (key() gives them the hash tag
// {name}), names of one MultiLock live on different masters, and keyspace
// events are published only by the master that holds the key, so the
// drivers' Listeners subscribe on every master (driver.ListenEach).

// subscribed reports whether ch has a subscriber on the node, or on every
// master of a cluster, where a subscription lives on one node only.
func subscribed(ctx context.Context, admin redis.UniversalClient, ch string) (bool, error) {
	cc, ok := admin.(*redis.ClusterClient)
	if !ok {
		n, err := admin.PubSubNumSub(ctx, ch).Result()
		return n[ch] > 0, err
	}
	var (
		mu  sync.Mutex
		all = true
	)
	err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		n, err := m.PubSubNumSub(ctx, ch).Result()
		mu.Lock()
		all = all && n[ch] > 0
		mu.Unlock()
		return err
	})
	return all, err
}

// masters returns how many masters of the cell's cluster hold the keys.
func (e env) masters(t testing.TB, ctx context.Context, keys ...string) int {
	t.Helper()
	cc := e.admin(t, 0).(*redis.ClusterClient)
	seen := map[string]bool{}
	for _, k := range keys {
		m, err := cc.MasterForKey(ctx, k)
		if err != nil {
			t.Fatalf("MasterForKey(%q): %v", k, err)
		}
		seen[m.Options().Addr] = true
	}
	return len(seen)
}
