// Package testenv gives tests the addresses of the real Redis and Valkey
// servers that scripts/test.sh starts (see scripts/servers.sh), and starts
// in-process miniredis servers when asked to (REDLOCK_TEST_MINIREDIS=1).
//
// When a variable is unset the test is skipped, so a plain `go test ./...`
// still works on a laptop; under CI (env CI non-empty) it fails instead, so a
// broken rig can never turn the integration tests into silent skips.
package testenv

import (
	"os"
	"strings"
	"testing"
)

// Nodes returns the five independent Redis 7 masters (REDLOCK_TEST_NODES).
func Nodes(t testing.TB) []string { t.Helper(); return addrs(t, "REDLOCK_TEST_NODES") }

// ValkeyNodes returns the five independent Valkey 9 masters, which support
// SET ... IFEQ and DELIFEQ (REDLOCK_TEST_VALKEY_NODES).
func ValkeyNodes(t testing.TB) []string { t.Helper(); return addrs(t, "REDLOCK_TEST_VALKEY_NODES") }

// Cluster returns the seed addresses (its masters) of the Redis Cluster
// (REDLOCK_TEST_CLUSTER).
func Cluster(t testing.TB) []string { t.Helper(); return addrs(t, "REDLOCK_TEST_CLUSTER") }

func addrs(t testing.TB, name string) []string {
	t.Helper()
	if out := lookup(name); len(out) > 0 {
		return out
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s not set under CI; run scripts/test.sh, which starts the servers", name)
	}
	t.Skipf("%s not set; run scripts/test.sh to start real servers", name)
	return nil
}

// lookup returns the comma-separated addresses in the variable name.
func lookup(name string) []string {
	var out []string
	for _, a := range strings.Split(os.Getenv(name), ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
