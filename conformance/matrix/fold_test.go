package matrix

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

var dims = Dimensions{
	Topologies: []string{"single", "cluster"},
	Strategies: []string{"Notify", "Poll"},
	Primitives: []string{"Mutex", "Latch"},
}

// events is a test2json stream, written as "action test [output]" lines.
func events(pkg, script string) []Event {
	var out []Event
	for line := range strings.Lines(script) {
		f := strings.SplitN(strings.TrimSpace(line), " ", 3)
		if len(f) < 2 {
			continue
		}
		e := Event{Action: f[0], Package: pkg, Test: f[1]}
		if f[1] == "-" {
			e.Test = ""
		}
		if len(f) == 3 {
			e.Output = f[2] + "\n"
		}
		out = append(out, e)
	}
	return out
}

// run folds one job of the goredis package on the given server.
func fold(t *testing.T, server, script string) (*Result, []int) {
	t.Helper()
	f := newFolder(dims)
	f.jobs = []*job{{pkg: "drivers/goredis", server: server, tops: 1}}
	var progress []int
	for _, e := range events("drivers/goredis", script) {
		progress = append(progress, f.add(0, e))
	}
	return f.result([]Server{{Name: server, Version: "Redis 7.0.15"}}), progress
}

const p = "TestConformance/goredis/redis7"

func TestFold(t *testing.T) {
	res, progress := fold(t, "redis7", `
run TestConformance
run TestConformance/goredis
run TestConformance/goredis/BadInput
pass TestConformance/goredis/BadInput
run `+p+`/NativeDetection
pass `+p+`/NativeDetection
run `+p+`/single/Notify/Mutex/Exclusive
pass `+p+`/single/Notify/Mutex/Exclusive
pass `+p+`/single/Notify/Mutex
run `+p+`/single/Notify/Latch/Count
output `+p+`/single/Notify/Latch/Count     latch.go:12: got 3, want 2
fail `+p+`/single/Notify/Latch/Count
fail `+p+`/single/Notify/Latch
fail `+p+`/single/Notify
run `+p+`/single/Poll/Mutex/History
output `+p+`/single/Poll/Mutex/History     history.go:40: n/a: no history on this server
skip `+p+`/single/Poll/Mutex/History
run `+p+`/single/Poll/Mutex/Exclusive
pass `+p+`/single/Poll/Mutex/Exclusive
pass `+p+`/single/Poll/Mutex
output `+p+`/single/Poll     cells.go:40: some log line
pass `+p+`/single/Poll
run `+p+`/cluster
output `+p+`/cluster     cells.go:40: n/a: goredis has no cluster here
skip `+p+`/cluster
run `+p+`/single/Poll/Latch
output `+p+`/single/Poll/Latch     latch.go:40: cannot reach
skip `+p+`/single/Poll/Latch
fail TestConformance/goredis
fail TestConformance
fail -
`)
	want := map[[4]string]Status{
		{"single", "Notify", "Mutex"}:  Pass,
		{"single", "Notify", "Latch"}:  Fail,
		{"single", "Poll", "Mutex"}:    Pass,
		{"single", "Poll", "Latch"}:    Skipped,
		{"cluster", "Notify", "Mutex"}: NA,
		{"cluster", "Poll", "Latch"}:   NA,
	}
	if len(res.Cells) != 8 {
		t.Fatalf("got %d cells, want 2 topologies × 2 strategies × 2 primitives = 8: %+v", len(res.Cells), res.Cells)
	}
	for k, st := range want {
		c, ok := res.Cell("goredis", "redis7", k[0], k[1], k[2])
		if !ok || c.Status != st {
			t.Errorf("%v: got %q (%v), want %q", k, c.Status, ok, st)
		}
	}
	for _, c := range []struct{ topo, strategy, primitive, reason string }{
		{"cluster", "Poll", "Mutex", "goredis has no cluster here"},
		{"single", "Notify", "Latch", "failed: Count"},
		{"single", "Poll", "Mutex", "cases not applicable: History: no history on this server"},
		{"single", "Poll", "Latch", "cannot reach"},
	} {
		if got, _ := res.Cell("goredis", "redis7", c.topo, c.strategy, c.primitive); got.Reason != c.reason {
			t.Errorf("%s/%s/%s: reason %q, want %q", c.topo, c.strategy, c.primitive, got.Reason, c.reason)
		}
	}
	if res.OK {
		t.Error("a run with a failed and a skipped cell is OK")
	}
	if len(res.Failures) != 1 || res.Failures[0].Test != p+"/single/Notify/Latch/Count" ||
		!strings.Contains(strings.Join(res.Failures[0].Output, "\n"), "got 3, want 2") {
		t.Errorf("failures: got %+v, want the Count case with its output", res.Failures)
	}
	if len(res.Checks) != 2 || res.Checks[0].Name != "BadInput" || res.Checks[1].Name != "redis7/NativeDetection" {
		t.Errorf("checks: got %+v, want BadInput and redis7/NativeDetection", res.Checks)
	}
	if last := progress[len(progress)-1]; last != 8 {
		t.Errorf("progress ended at %d cells, want 8", last)
	}
}

func TestFoldMissing(t *testing.T) {
	// A binary that died in the middle of a cell, before the others.
	res, _ := fold(t, "redis7", `
run `+p+`/single/Poll/Mutex/Exclusive
output `+p+`/single/Poll/Mutex/Exclusive panic: boom
output - FAIL	drivers/goredis	0.1s
fail -
`)
	if c, _ := res.Cell("goredis", "redis7", "single", "Poll", "Mutex"); c.Status != Missing {
		t.Errorf("the cell whose binary died: got %q, want missing", c.Status)
	}
	if c, _ := res.Cell("goredis", "redis7", "cluster", "Poll", "Latch"); c.Status != Missing || res.OK {
		t.Errorf("a cell never reported: got %q (run OK %v), want missing and the run failed", c.Status, res.OK)
	}
	found := false
	for _, f := range res.Failures {
		found = found || strings.Contains(strings.Join(f.Output, "\n"), "panic: boom")
	}
	if !found {
		t.Errorf("the panic is not among the failures: %+v", res.Failures)
	}
}

func TestParse(t *testing.T) {
	for name, want := range map[string]coords{
		"TestConformance/goredis/BadInput":                   {driver: "goredis"},
		"TestConformance/goredis/redis7/NativeDetection":     {driver: "goredis"},
		"TestConformance/goredis/Notify/WakesOneWaiter":      {driver: "goredis"},
		"TestConformanceRESP2/goredis/redis7/single":         {driver: "goredis-RESP2", server: "redis7", topology: "single", level: 4},
		"TestConformance/rueidis/valkey9/cluster/Poll":       {driver: "rueidis", server: "valkey9", topology: "cluster", strategy: "Poll", level: 5},
		"TestConformance/redigo/miniredis/single/Poll/Mutex": {driver: "redigo", server: "miniredis", topology: "single", strategy: "Poll", primitive: "Mutex", level: 6},
		"TestConformance/redigo/redis7/single/Poll/Mutex/MinorityDown/x": {
			driver: "redigo", server: "redis7", topology: "single", strategy: "Poll", primitive: "Mutex", rest: "MinorityDown/x", level: 7},
		"TestOther/goredis/redis7/single/Poll/Mutex": {},
	} {
		if got := dims.parse(name); got != want {
			t.Errorf("parse(%q) = %+v, want %+v", name, got, want)
		}
	}
}

func TestWriteText(t *testing.T) {
	res, _ := fold(t, "redis7", `
pass `+p+`/single/Notify/Mutex
pass `+p+`/single/Poll/Mutex
fail `+p+`/single/Poll/Latch
output `+p+`/single/Notify/Latch     cells.go:1: n/a: Latch needs RESP3
skip `+p+`/single/Notify/Latch
output `+p+`/cluster     cells.go:1: n/a: no cluster
skip `+p+`/cluster
`)
	var b bytes.Buffer
	res.WriteText(&b)
	out := b.String()
	for _, want := range []string{
		"goredis",
		"single cluster",
		"Mutex  Notify  ✓      a\n",
		"Latch  Notify  b      a\n",
		"       Poll    ✗      a\n",
		"  a  no cluster",
		"  b  Latch needs RESP3",
		"r = redis7 (Redis 7.0.15)",
		"8 cells: 2 passed, 5 not applicable, 1 failed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	b.Reset()
	res.WriteMarkdown(&b)
	for _, want := range []string{
		"**redis7** (Redis 7.0.15)",
		"| primitive | strategy | goredis<br>single | goredis<br>cluster |",
		"| Latch | Notify | n/a<sup>b</sup> | n/a<sup>a</sup> |",
		"- <sup>a</sup> no cluster",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the Markdown lacks %q:\n%s", want, b.String())
		}
	}
}

func TestFoldGroupFailed(t *testing.T) {
	// The Notify group failed before any primitive (a broken fail-fast
	// check); in the Poll group, only the Mutex ran (a narrowed run).
	res, _ := fold(t, "redis7", `
output `+p+`/single/Notify     cells.go:60: New with Notify: succeeded, want ErrNotifyUnsupported
fail `+p+`/single/Notify
pass `+p+`/single/Poll/Mutex
pass `+p+`/single/Poll
`)
	for _, prim := range []string{"Mutex", "Latch"} {
		c, _ := res.Cell("goredis", "redis7", "single", "Notify", prim)
		if c.Status != Fail || c.Reason != "the cell failed before this primitive ran: New with Notify: succeeded, want ErrNotifyUnsupported" {
			t.Errorf("Notify %s: got %q %q, want failed with the group's message", prim, c.Status, c.Reason)
		}
	}
	if c, _ := res.Cell("goredis", "redis7", "single", "Poll", "Latch"); c.Status != Missing {
		t.Errorf("a primitive that did not run in a group that ran others: got %q, want missing", c.Status)
	}
}

// A check runs in every job but applies on one server: across jobs a pass
// wins over a skip, a group skipped before its subtests in one job is
// still a group, and a check that never ran keeps its n/a.
func TestFoldChecksAcrossJobs(t *testing.T) {
	f := newFolder(dims)
	f.jobs = []*job{{pkg: "drivers/goredis", server: "redis7", tops: 1}, {pkg: "drivers/goredis", server: "miniredis", tops: 1}}
	jobs := []string{`
run TestConformance/goredis/Notify/WakesOneWaiter
pass TestConformance/goredis/Notify/WakesOneWaiter
run TestConformance/goredis/RESP2Only
output TestConformance/goredis/RESP2Only     notify.go:29: n/a: speaks RESP3
skip TestConformance/goredis/RESP2Only
pass TestConformance/goredis/Notify
`, `
run TestConformance/goredis/Notify/WakesOneWaiter
output TestConformance/goredis/Notify/WakesOneWaiter     testenv.go:30: REDLOCK_TEST_NODES not set
skip TestConformance/goredis/Notify/WakesOneWaiter
run TestConformance/goredis/Notify
output TestConformance/goredis/Notify     testenv.go:30: REDLOCK_TEST_NODES not set
skip TestConformance/goredis/Notify
run TestConformance/goredis/RESP2Only
output TestConformance/goredis/RESP2Only     notify.go:29: n/a: speaks RESP3
skip TestConformance/goredis/RESP2Only
`}
	for j, script := range jobs {
		for _, e := range events("drivers/goredis", script) {
			f.add(j, e)
		}
	}
	res := f.result([]Server{{Name: "redis7"}, {Name: "miniredis"}})
	want := map[string]Status{"Notify/WakesOneWaiter": Pass, "RESP2Only": NA}
	if len(res.Checks) != len(want) {
		t.Fatalf("checks: got %+v, want %v", res.Checks, want)
	}
	for _, c := range res.Checks {
		if c.Status != want[c.Name] {
			t.Errorf("check %s: got %q, want %q", c.Name, c.Status, want[c.Name])
		}
	}
}

func TestAppendLineKeepsHeadAndTail(t *testing.T) {
	var lines []string
	const n = 1000
	for i := range n {
		lines = appendLine(lines, fmt.Sprintf("line %d\n", i))
	}
	if len(lines) != maxOutput {
		t.Fatalf("%d lines kept, want %d", len(lines), maxOutput)
	}
	if lines[0] != "line 0" || lines[keepHead-1] != fmt.Sprintf("line %d", keepHead-1) {
		t.Errorf("the first lines: %q … %q", lines[0], lines[keepHead-1])
	}
	tail := maxOutput - keepHead - 1
	if want := fmt.Sprintf(leftOut, n-keepHead-tail); lines[keepHead] != want {
		t.Errorf("the count: %q, want %q", lines[keepHead], want)
	}
	if lines[keepHead+1] != fmt.Sprintf("line %d", n-tail) || lines[maxOutput-1] != fmt.Sprintf("line %d", n-1) {
		t.Errorf("the last lines: %q … %q", lines[keepHead+1], lines[maxOutput-1])
	}
}
