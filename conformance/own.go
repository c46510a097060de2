package conformance

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/matrix"
)

// ownServers starts servers for the case alone, from redis-server on
// PATH, killed at t.Cleanup: a Redis Cluster of masters masters with a
// replica each, or with masters 0 one master and its replica (not a
// cluster). The case may pause, kill and promote them.
func ownServers(t *testing.T, ctx context.Context, masters int) *matrix.LocalCluster {
	t.Helper()
	start := func(ctx context.Context) (*matrix.LocalCluster, error) { return matrix.StartCluster(ctx, masters) }
	if masters == 0 {
		start = matrix.StartPair
	}
	lc, err := start(ctx)
	if err != nil {
		t.Fatalf("servers of the case's own: %v", err)
	}
	t.Cleanup(lc.Close)
	return lc
}

// plain returns a go-redis client to the one server at addr, closed at
// t.Cleanup: to inspect and break a server of the case's own.
func plain(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}
