package testenv

import (
	"os"
	"testing"

	"github.com/alicebob/miniredis/v2"
)

// MiniredisEnv names the variable that adds the miniredis server to a run:
// set to 1, the conformance cells also run on in-process miniredis nodes.
const MiniredisEnv = "REDLOCK_TEST_MINIREDIS"

// Server is one kind of server the conformance cells run on: its name in
// test names (redis7, redis8, valkey9, miniredis), its independent masters, and
// the seeds of a Redis Cluster of that server, if the run has one.
type Server struct {
	Name    string
	Nodes   []string
	Cluster []string
}

// Servers returns the servers this run has, in a fixed order: Redis 7
// (REDLOCK_TEST_NODES, with the cluster REDLOCK_TEST_CLUSTER), Redis 8
// (REDLOCK_TEST_REDIS8_NODES, with REDLOCK_TEST_REDIS8_CLUSTER), Valkey 9
// (REDLOCK_TEST_VALKEY_NODES, with REDLOCK_TEST_VALKEY_CLUSTER) and, with
// REDLOCK_TEST_MINIREDIS=1, three miniredis nodes started in this process
// and stopped at t's cleanup. A server whose variable is unset is left
// out; under CI all six variables must be set (the test fails), and a
// run with no server at all is skipped.
func Servers(t testing.TB) []Server {
	t.Helper()
	var out []Server
	for _, s := range []struct{ name, env, cluster string }{
		{"redis7", "REDLOCK_TEST_NODES", "REDLOCK_TEST_CLUSTER"},
		{"redis8", "REDLOCK_TEST_REDIS8_NODES", "REDLOCK_TEST_REDIS8_CLUSTER"},
		{"valkey9", "REDLOCK_TEST_VALKEY_NODES", "REDLOCK_TEST_VALKEY_CLUSTER"},
	} {
		for _, v := range []string{s.env, s.cluster} {
			if v != "" && lookup(v) == nil && os.Getenv("CI") != "" {
				t.Fatalf("%s not set under CI; run scripts/test.sh, which starts the servers", v)
			}
		}
		if nodes := lookup(s.env); len(nodes) > 0 {
			out = append(out, Server{Name: s.name, Nodes: nodes, Cluster: lookup(s.cluster)})
		}
	}
	if os.Getenv(MiniredisEnv) == "1" {
		// Three: five in-process nodes, each script in a fresh Lua state,
		// time out on two cores under -race; the real servers have five.
		out = append(out, Server{Name: "miniredis", Nodes: Miniredis(t, 3)})
	}
	if len(out) == 0 {
		t.Skipf("no servers: set REDLOCK_TEST_NODES (scripts/test.sh starts real servers) or %s=1", MiniredisEnv)
	}
	return out
}

// Miniredis starts n independent in-process miniredis servers, stopped at
// t's cleanup, and returns their addresses. Their TTLs run on the wall
// clock (ClockTTL), so keys expire in real time as on a real server and
// the cases that wait for an expiry need no special treatment.
func Miniredis(t testing.TB, n int) []string {
	t.Helper()
	addrs := make([]string, n)
	for i := range addrs {
		m := miniredis.NewMiniRedis()
		m.ClockTTL(true)
		if err := m.Start(); err != nil {
			t.Fatalf("starting miniredis: %v", err)
		}
		t.Cleanup(m.Close)
		addrs[i] = m.Addr()
	}
	return addrs
}
