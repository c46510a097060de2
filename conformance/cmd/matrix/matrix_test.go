package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redlockgo/redlock/conformance/matrix"
)

// TestMatrixWithOnlyGo runs a narrowed matrix the way a newcomer with only
// Go installed would: no redis-server or valkey-server on PATH, so the
// cells run on embedded miniredis, and the Notify cells are not applicable
// with the reason the suite gives.
func TestMatrixWithOnlyGo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the conformance tests")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	t.Setenv("PATH", filepath.Dir(gobin))
	t.Setenv("CGO_ENABLED", "0") // no C compiler either (scripts/test.sh sets 1, for -race)
	var stdout, stderr bytes.Buffer
	// One case, as this runs beside the other packages' tests.
	code := runMatrix(context.Background(), []string{"--json", "--run", "goredis/miniredis/single//Mutex/Exclusive"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, &stdout, &stderr)
	}
	if !strings.Contains(stderr.String(), "embedded miniredis only") {
		t.Errorf("stderr does not say it fell back to miniredis:\n%s", &stderr)
	}
	var res matrix.Result
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("--json: %v\n%s", err, &stdout)
	}
	// A cell group that is not applicable (Notify on miniredis) decides
	// every primitive's cell, so the Notify row has them all: look at the
	// Mutex's.
	got := map[string]matrix.Cell{}
	for _, c := range res.Cells {
		if c.Primitive == "Mutex" {
			got[c.Driver+"/"+c.Strategy] = c
		}
	}
	for key, want := range map[string]matrix.Status{
		"goredis/Poll":         matrix.Pass,
		"goredis-RESP2/Poll":   matrix.Pass,
		"goredis/Notify":       matrix.NA,
		"goredis-RESP2/Notify": matrix.NA,
	} {
		if c := got[key]; c.Status != want || c.Server != "miniredis" || c.Primitive != "Mutex" {
			t.Errorf("%s: got %+v, want %s on miniredis", key, c, want)
		}
	}
	if r := got["goredis/Notify"].Reason; !strings.Contains(r, "miniredis has no keyspace notifications") || !strings.Contains(r, "ErrNotifyUnsupported") {
		t.Errorf("the Notify cell's reason %q does not say why", r)
	}
	if len(got) != 4 || !res.OK {
		t.Errorf("want exactly the 4 Mutex cells, all OK; got %d, OK %v", len(got), res.OK)
	}
}

func TestMatrixUsage(t *testing.T) {
	for _, args := range [][]string{{"extra"}, {"--nope"}} {
		var stdout, stderr bytes.Buffer
		if code := runMatrix(context.Background(), args, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage: redlock matrix") {
			t.Errorf("redlock %q: exit %d, stderr %q; want 2 and the usage", args, code, &stderr)
		}
	}
}

func TestRewriteDocs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "matrix.md")
	before, after := "# title\n\nintro\n\n", "\n\nrest\n"
	os.WriteFile(path, []byte(before+docsBegin+" -->\nold table\n"+docsEnd+after), 0o644)
	res := &matrix.Result{
		Servers: []matrix.Server{{Name: "miniredis", Version: "miniredis v2"}}, Drivers: []string{"goredis"},
		Topologies: []string{"single"}, Strategies: []string{"Poll"}, Primitives: []string{"Mutex"},
		Cells: []matrix.Cell{{Driver: "goredis", Server: "miniredis", Topology: "single", Strategy: "Poll", Primitive: "Mutex", Status: matrix.Pass}},
		OK:    true,
	}
	if err := rewriteDocs(path, res); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	s := string(b)
	if !strings.HasPrefix(s, before) || !strings.HasSuffix(s, docsEnd+after) || strings.Contains(s, "old table") ||
		!strings.Contains(s, "| Mutex | Poll | ✓ |") || !strings.Contains(s, "go run ./cmd/redlock matrix --docs") {
		t.Errorf("rewritten docs/matrix.md:\n%s", s)
	}
	res.OK = false
	if err := rewriteDocs(path, res); err == nil {
		t.Error("a failed run rewrote docs/matrix.md")
	}
}
