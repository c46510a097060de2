package conformance

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// clusterClientTimers are goroutines a closed rueidis cluster client
// leaves behind for five seconds: after a topology refresh it closes the
// connections it replaced only then (rueidis cluster.go, _refresh and
// redirectOrNew), and a refresh a MOVED asked for runs after up to a
// second's sleep (singleflight.go, DelayDo). They end by themselves; the
// client's own are gone.
var clusterClientTimers = []goleak.Option{
	goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*call).DelayDo.func1"),
	goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient).redirectOrNew.func1"),
}

// The cluster cells run every primitive on a three-master Redis Cluster,
// through the driver's cluster client, as one node. What differs there:
// a primitive's keys must share one slot (key() gives them the hash tag
// {name}), names of one MultiLock live on different masters, and keyspace
// events are published only by the master that holds the key, so the
// drivers' Listeners subscribe on every master (adapter.ListenEach).

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

// testNotifyConfiguresEveryServer: under Notify, Ping (as a first wait
// does) adds the keyspace event flags to every master and every replica of
// a cluster (a promoted replica publishes its keys' events), each keeping
// the flags it had.
// A replica is given flags of its own first; a master's flags are left as
// they are, as other cases rely on them meanwhile.
func testNotifyConfiguresEveryServer(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	cc := e.admin(t, 0).(*redis.ClusterClient)
	var (
		mu      sync.Mutex
		flags   = map[string]string{} // by address
		replica string
	)
	read := func() {
		t.Helper()
		clear(flags)
		err := cc.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			v, err := n.ConfigGet(ctx, "notify-keyspace-events").Result()
			mu.Lock()
			defer mu.Unlock()
			flags[n.Options().Addr] = v["notify-keyspace-events"]
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	err := cc.ForEachSlave(ctx, func(ctx context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		if replica != "" {
			return nil
		}
		replica = n.Options().Addr
		return n.ConfigSet(ctx, "notify-keyspace-events", "El").Err()
	})
	if err != nil || replica == "" {
		t.Fatalf("the cluster needs a replica for this case (%q): %v", replica, err)
	}
	if err := e.client(t).Ping(ctx); err != nil { // New sends nothing; Ping configures, as a first wait does
		t.Fatalf("Ping: %v", err)
	}
	read()
	for addr, f := range flags {
		all := strings.ReplaceAll(f, "A", "g$lshzxetd")
		for _, want := range "Kgx" {
			if !strings.ContainsRune(all, want) {
				t.Errorf("%s: notify-keyspace-events is %q after Ping, which lacks %c", addr, f, want)
			}
		}
		if addr == replica && !(strings.ContainsRune(f, 'E') && strings.ContainsRune(all, 'l')) {
			t.Errorf("replica %s: notify-keyspace-events is %q after Ping: its own flags El were not kept", addr, f)
		}
	}
	if len(flags) < 6 {
		t.Errorf("read the flags of %d servers, want the 3 masters and 3 replicas: %v", len(flags), flags)
	}
}
