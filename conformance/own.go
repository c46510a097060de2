package conformance

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/matrix"
	"github.com/redlockgo/redlock/core"
)

// ownServers starts servers for the case alone, of the cell's server,
// killed at t.Cleanup: a Cluster of masters masters with a replica each,
// its servers started with the extra arguments, or with masters 0 one
// master and its replica (not a cluster). The case may pause, kill and
// promote them.
func ownServers(t *testing.T, ctx context.Context, e env, masters int, extra ...string) *matrix.LocalCluster {
	t.Helper()
	bin := e.binary(t)
	start := func(ctx context.Context) (*matrix.LocalCluster, error) {
		return matrix.StartCluster(ctx, bin, masters, extra...)
	}
	if masters == 0 {
		start = func(ctx context.Context) (*matrix.LocalCluster, error) { return matrix.StartPair(ctx, bin) }
	}
	lc, err := start(ctx)
	if err != nil {
		t.Fatalf("servers of the case's own: %v", err)
	}
	t.Cleanup(lc.Close)
	return lc
}

// ownNodes starts n independent servers of the cell's server, killed at
// t.Cleanup, for a case that pauses or stops them.
func ownNodes(t *testing.T, ctx context.Context, e env, n int) []string {
	t.Helper()
	lc, err := matrix.StartServers(ctx, e.binary(t), n)
	if err != nil {
		t.Fatalf("servers of the case's own: %v", err)
	}
	t.Cleanup(lc.Close)
	return lc.Masters
}

// allNodes lists lc's masters, then their replicas.
func allNodes(lc *matrix.LocalCluster) []string { return slices.Concat(lc.Masters, lc.Replicas) }

// ownClient returns a Client over lc, servers of the case's own: the
// Cluster, with all its nodes as seeds, or the pair's master. Its leases
// last ttl; a node has a second to answer, as a loaded machine may need;
// opts come last.
func (e env) ownClient(t *testing.T, lc *matrix.LocalCluster, ttl time.Duration, opts ...core.Option) *core.Client {
	addr := lc.Masters[0]
	if e.cluster {
		addr = strings.Join(allNodes(lc), ",")
	}
	return e.clientOn(t, []string{addr}, append([]core.Option{core.WithTTL(ttl), core.WithNodeTimeout(time.Second)}, opts...)...)
}

// plainCluster returns a go-redis cluster client over nodes, closed at
// t.Cleanup.
func plainCluster(t *testing.T, nodes []string) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: nodes, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// binary is the program of the cell's server: redis-server on PATH for
// Redis 7, or valkey-server and Redis 8's redis-server, which
// scripts/test.sh runs from the chroot it names in REDLOCK_VALKEY_CHROOT
// (the program on PATH without it).
func (e env) binary(t *testing.T) matrix.Binary {
	name, chrooted := map[string]string{"redis8": "redis-server", "valkey9": "valkey-server"}[e.server]
	switch root := os.Getenv("REDLOCK_VALKEY_CHROOT"); {
	case e.server == "redis7":
		return matrix.RedisServer
	case !chrooted:
	case root != "" && os.Geteuid() != 0:
		t.Fatalf("%s's %s runs in the chroot %s (REDLOCK_VALKEY_CHROOT), which needs root: run the tests as root, or unset it with that %s on PATH", e.server, name, root, name)
	default:
		return matrix.Binary{Name: name, Root: root}
	}
	t.Fatalf("no servers of its own for a %s cell", e.server)
	return matrix.Binary{}
}

// plain returns a go-redis client to the one server at addr, closed at
// t.Cleanup: to inspect and break a server of the case's own.
func plain(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}
