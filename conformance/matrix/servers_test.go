package matrix

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/conformance/testenv"
)

// TestServerEnv checks that the variables a run sets for a server are
// those the suite reads: each gives back that server, and only it.
func TestServerEnv(t *testing.T) {
	for _, s := range []Server{
		{Name: "redis7", Nodes: []string{"127.0.0.1:1", "127.0.0.1:2"}, Cluster: []string{"127.0.0.1:3"}},
		{Name: "redis8", Nodes: []string{"127.0.0.1:7"}, Cluster: []string{"127.0.0.1:8", "127.0.0.1:9"}},
		{Name: "redis8", Nodes: []string{"127.0.0.1:7"}},
		{Name: "valkey9", Nodes: []string{"127.0.0.1:4"}, Cluster: []string{"127.0.0.1:5", "127.0.0.1:6"}},
		{Name: "valkey9", Nodes: []string{"127.0.0.1:4"}},
		{Name: "miniredis"},
	} {
		t.Run(s.Name, func(t *testing.T) {
			base := []string{"REDLOCK_TEST_NODES=stale:1", "REDLOCK_TEST_CLUSTER=stale:2", "REDLOCK_TEST_VALKEY_NODES=stale:3",
				"REDLOCK_TEST_VALKEY_CLUSTER=stale:4", "REDLOCK_TEST_REDIS8_NODES=stale:5", "REDLOCK_TEST_REDIS8_CLUSTER=stale:6",
				"REDLOCK_TEST_MINIREDIS=1", "CI=1"}
			for _, kv := range base {
				k, _, _ := strings.Cut(kv, "=")
				t.Setenv(k, "")
			}
			for _, kv := range s.env(base) {
				k, v, _ := strings.Cut(kv, "=")
				t.Setenv(k, v)
			}
			got := testenv.Servers(t)
			if len(got) != 1 || got[0].Name != s.Name {
				t.Fatalf("testenv.Servers = %+v, want %s alone", got, s.Name)
			}
			if s.Nodes != nil && (!slices.Equal(got[0].Nodes, s.Nodes) || !slices.Equal(got[0].Cluster, s.Cluster)) {
				t.Errorf("testenv.Servers = %+v, want nodes %v, cluster %v", got[0], s.Nodes, s.Cluster)
			}
		})
	}
}

// TestServerName checks that the nodes a user gives are told apart as
// the suite's servers: Redis by its major version.
func TestServerName(t *testing.T) {
	for _, c := range []struct{ kind, version, want string }{
		{"Redis", "7.0.15", "redis7"}, {"Redis", "7.4.2", "redis7"}, {"Redis", "6.2.0", "redis7"},
		{"Redis", "8.0.2", "redis8"}, {"Redis", "8.4.0", "redis8"}, {"Redis", "10.0.0", "redis8"},
		{"Valkey", "9.1.2", "valkey9"}, {"Valkey", "8.1.1", "valkey9"},
	} {
		if got := serverName(c.kind, c.version); got != c.want {
			t.Errorf("serverName(%s, %s) = %s, want %s", c.kind, c.version, got, c.want)
		}
	}
}

// TestLocalCluster starts the throwaway servers of a run without
// --nodes: the Redis Cluster has three masters with a replica each,
// linked, as the conformance cluster cells need.
func TestLocalCluster(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		t.Skip("redis-server is not on PATH")
	}
	ctx := context.Background()
	servers, stop, err := Local(ctx)
	defer stop()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(servers, func(s Server) bool { return strings.HasPrefix(s.Name, "redis") })
	if i < 0 || len(servers[i].Cluster) != 3 {
		t.Fatalf("Local gave %+v, want a Redis server with 3 cluster seeds", servers)
	}
	c := redis.NewClient(&redis.Options{Addr: servers[i].Cluster[0], Protocol: 2, DisableIdentity: true})
	defer c.Close()
	nodes, err := c.ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if m, r := strings.Count(nodes, "master"), strings.Count(nodes, "slave"); m != 3 || r != 3 {
		t.Errorf("CLUSTER NODES lists %d masters and %d replicas, want 3 and 3:\n%s", m, r, nodes)
	}
}
