package matrix

import (
	"fmt"
	"slices"
	"strings"
)

// Event is one event of `go test -json`, or of `go tool test2json -t`
// (see `go doc test2json`).
type Event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// Dimensions are the names the suite's cells are made of, in run order:
// what the parser recognises in a subtest's name, and the table's order.
type Dimensions struct {
	Topologies []string // conformance.Topologies()
	Strategies []string // the wait strategies: Notify, Poll
	Primitives []string // conformance.Primitives()
}

// coords locate a test in the matrix. level is how deep the name reaches
// into a cell: 0 not at all (a check, or a container such as
// TestConformance/goredis), 4 a column (driver/server/topology), 5 a cell
// group (…/strategy), 6 a cell (…/primitive), 7 a case.
type coords struct {
	driver, server, topology, strategy, primitive, rest string
	level                                               int
}

// parse reads a subtest name of the suite.
func (d Dimensions) parse(test string) coords {
	s := strings.Split(test, "/")
	variant, ok := strings.CutPrefix(s[0], "TestConformance")
	if !ok || len(s) < 2 {
		return coords{}
	}
	c := coords{driver: s[1]}
	if variant != "" {
		c.driver += "-" + variant
	}
	if len(s) < 4 || !slices.Contains(d.Topologies, s[3]) {
		return c
	}
	c.server, c.topology, c.level = s[2], s[3], 4
	if len(s) < 5 || !slices.Contains(d.Strategies, s[4]) {
		return c
	}
	c.strategy, c.level = s[4], 5
	if len(s) >= 6 {
		c.primitive, c.level = s[5], 6
	}
	if len(s) >= 7 {
		c.rest, c.level = strings.Join(s[6:], "/"), 7
	}
	return c
}

// check names a test outside the cells by what follows the driver.
func check(test string) string {
	_, after, _ := strings.Cut(test, "/")
	_, after, _ = strings.Cut(after, "/")
	return after
}

// maxOutput bounds the lines kept per test: enough for a failure.
const maxOutput = 200

// testKey names a test of one job: the same name (a check such as
// BadInput) runs in every job of a package.
type testKey struct {
	job  int
	name string
}

// test is what a job's events said about one test.
type test struct {
	job     int
	pkg     string
	name    string
	action  string // run, pass, fail, skip
	elapsed float64
	output  []string
}

// reason is the text of a skip: the "n/a: " line, or else the last line
// the test logged, with the file:line prefix cut.
func (t *test) reason() (text string, na bool) {
	for i := len(t.output) - 1; i >= 0; i-- {
		if _, after, ok := strings.Cut(t.output[i], "n/a: "); ok {
			return strings.TrimSpace(after), true
		}
	}
	for i := len(t.output) - 1; i >= 0; i-- {
		line := strings.TrimSpace(t.output[i])
		if line == "" || strings.HasPrefix(line, "=== ") || strings.HasPrefix(line, "--- ") {
			continue
		}
		if _, after, ok := strings.Cut(line, ": "); ok && strings.Contains(line[:len(line)-len(after)], ".go:") {
			line = after
		}
		return line, false
	}
	return "", false
}

func (t *test) status() Status {
	switch t.action {
	case "pass":
		return Pass
	case "fail":
		return Fail
	case "skip":
		if _, na := t.reason(); na {
			return NA
		}
		return Skipped
	}
	return Fail // started, never ended: the binary died under it
}

// job is one test binary run: a package on one server.
type job struct {
	pkg    string
	server string
	tops   int // its top-level tests: one driver each
	action string
	output []string
}

// folder folds the event streams of the jobs into a Result.
type folder struct {
	dims     Dimensions
	jobs     []*job
	tests    map[testKey]*test // by job and name
	order    []testKey
	resolved map[string]bool // cells with an outcome, for progress
	reruns   []Rerun

	hasChild, childFailed map[testKey]bool // set by result
}

func newFolder(dims Dimensions) *folder {
	return &folder{dims: dims, tests: map[testKey]*test{}, resolved: map[string]bool{}}
}

// expected is how many cells the jobs will report.
func (f *folder) expected() int {
	n := 0
	for _, j := range f.jobs {
		n += j.tops * len(f.dims.Topologies) * len(f.dims.Strategies) * len(f.dims.Primitives)
	}
	return n
}

// add folds one event of job j and returns how many cells now have an
// outcome.
func (f *folder) add(j int, e Event) int {
	if e.Test == "" {
		jb := f.jobs[j]
		switch e.Action {
		case "output":
			jb.output = appendLine(jb.output, e.Output)
		case "pass", "fail", "skip":
			jb.action = e.Action
		}
		return len(f.resolved)
	}
	k := testKey{j, e.Test}
	t := f.tests[k]
	if t == nil {
		t = &test{job: j, pkg: e.Package, name: e.Test}
		f.tests[k] = t
		f.order = append(f.order, k)
	}
	switch e.Action {
	case "run":
		t.action = "run"
	case "output":
		t.output = appendLine(t.output, e.Output)
	case "pass", "fail", "skip":
		t.action, t.elapsed = e.Action, e.Elapsed
		f.resolve(e.Test)
	}
	return len(f.resolved)
}

// keepHead is how many of a test's first lines appendLine keeps: a
// binary that timed out says there which tests were running, before the
// stacks of every goroutine.
const keepHead = maxOutput / 4

// appendLine adds s to a test's lines, keeping the first keepHead and the
// last ones, with a line between that counts those left out.
func appendLine(lines []string, s string) []string {
	lines = append(lines, strings.TrimRight(s, "\n"))
	if len(lines) <= maxOutput {
		return lines
	}
	left := 0
	if _, err := fmt.Sscanf(lines[keepHead], leftOut, &left); err != nil {
		left = 1 // the first cut: the line the count takes the place of
	}
	lines = slices.Delete(lines, keepHead+1, keepHead+2)
	lines[keepHead] = fmt.Sprintf(leftOut, left+1)
	return lines
}

const leftOut = "… %d lines left out …"

// resolve marks the cells an ended test decides: itself for a cell, every
// cell under it for a column or a cell group (which end after their
// cells, or instead of them when skipped).
func (f *folder) resolve(name string) {
	c := f.dims.parse(name)
	switch c.level {
	case 6:
		f.resolved[name] = true
	case 4, 5:
		strategies := f.dims.Strategies
		if c.level == 5 {
			strategies = []string{c.strategy}
		}
		top := strings.SplitN(name, "/", 3) // TestConformance[Variant], driver, the rest
		for _, s := range strategies {
			for _, p := range f.dims.Primitives {
				f.resolved[strings.Join([]string{top[0], top[1], c.server, c.topology, s, p}, "/")] = true
			}
		}
	}
}
