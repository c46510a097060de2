package main

import (
	"slices"
	"testing"
)

func TestParseWorkloads(t *testing.T) {
	ws, err := parseWorkloads("cycle,contend,primitives,latency", "2,10", "0,20ms", "1")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, w := range ws {
		names = append(names, w.name)
	}
	want := []string{"cycle", "contend-2-0s", "contend-2-20ms", "contend-10-0s", "contend-10-20ms", "primitives", "latency"}
	if !slices.Equal(names, want) {
		t.Errorf("workloads %v, want %v", names, want)
	}
	for _, bad := range []string{"primitive", "cycle,"} {
		if _, err := parseWorkloads(bad, "10", "20ms", "1"); err == nil {
			t.Errorf("workloads %q: no error", bad)
		}
	}
}

func TestLibrariesOf(t *testing.T) {
	ids := func(w workload, nodes int) []string {
		var s []string
		for _, l := range librariesOf(w, libraries, nodes) {
			s = append(s, l.id)
		}
		return s
	}
	// The primitives workload runs every library, whatever -nodes says: the
	// peers without Redlock on one node only.
	if got := ids(workload{sweep: "primitives"}, 3); len(got) != len(libraries) {
		t.Errorf("primitives: %v, want every library", got)
	}
	want := []string{"redlock-goredis-notify", "redlock-goredis-poll", "redsync", "redsync-10ms"}
	if got := ids(workload{sweep: "latency"}, 1); !slices.Equal(got, want) {
		t.Errorf("latency: %v, want %v", got, want)
	}
	if got := ids(workload{name: "cycle"}, 3); slices.Contains(got, "redislock-linear") || !slices.Contains(got, "redsync") {
		t.Errorf("cycle on 3 nodes: %v, want the libraries with Redlock only", got)
	}
}
