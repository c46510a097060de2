package matrix

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// cellKey is a cell's coordinates, and the level of the test that spoke
// for it (4 column, 5 cell group, 6 cell).
type cellKey struct {
	driver, server, topology, strategy, primitive string
	level                                         int
}

// result assembles the Result from everything folded so far. Every cell
// the jobs were to report is in it: those that never did are Missing.
func (f *folder) result(servers []Server) *Result {
	r := &Result{
		Servers:    servers,
		Topologies: f.dims.Topologies,
		Strategies: f.dims.Strategies,
		Primitives: slices.Clone(f.dims.Primitives),
	}
	f.hasChild, f.childFailed = f.parents()
	at := map[cellKey]*test{}
	cases := map[cellKey][]Case{}
	ran := map[cellKey]bool{} // cell groups with a primitive that ran
	type seen struct{ job, seq int }
	drivers := map[string]seen{}
	jobDrivers := map[int][]string{}
	for seq, k := range f.order {
		t := f.tests[k]
		c := f.dims.parse(t.name)
		if c.driver == "" {
			continue
		}
		if _, ok := drivers[c.driver]; !ok {
			drivers[c.driver] = seen{t.job, seq}
		}
		if !slices.Contains(jobDrivers[t.job], c.driver) {
			jobDrivers[t.job] = append(jobDrivers[t.job], c.driver)
		}
		if c.primitive != "" && !slices.Contains(r.Primitives, c.primitive) {
			r.Primitives = append(r.Primitives, c.primitive) // one the dimensions did not name
		}
		key := cellKey{c.driver, c.server, c.topology, c.strategy, c.primitive, c.level}
		switch c.level {
		case 0:
			f.addCheck(r, t, c.driver)
		case 4, 5, 6:
			at[key] = t
			if c.level == 6 {
				ran[cellKey{c.driver, c.server, c.topology, c.strategy, "", 5}] = true
			}
		case 7:
			key.level = 6
			text, _ := t.reason()
			if st := t.status(); st == Pass || st == Fail {
				text = ""
			}
			cases[key] = append(cases[key], Case{Name: c.rest, Status: t.status(), Reason: text, Seconds: t.elapsed})
		}
	}
	r.Drivers = sortedKeys(drivers, func(a, b seen) int { return cmp.Or(a.job-b.job, a.seq-b.seq) })

	// The cells: every one the jobs were to report, in table order.
	want := map[cellKey]bool{}
	for j, jb := range f.jobs {
		for _, d := range jobDrivers[j] {
			for _, tp := range r.Topologies {
				for _, st := range r.Strategies {
					for _, p := range r.Primitives {
						want[cellKey{d, jb.server, tp, st, p, 6}] = true
					}
				}
			}
		}
	}
	for k := range at {
		if k.level == 6 {
			want[k] = true
		}
	}
	for k := range want {
		r.Cells = append(r.Cells, cellAt(k, at, ran, cases[k]))
	}
	order := func(list []string, s string) int { return slices.Index(list, s) }
	serverNames := make([]string, len(servers))
	for i, s := range servers {
		serverNames[i] = s.Name
	}
	slices.SortFunc(r.Cells, func(a, b Cell) int {
		return cmp.Or(
			order(r.Primitives, a.Primitive)-order(r.Primitives, b.Primitive),
			order(r.Strategies, a.Strategy)-order(r.Strategies, b.Strategy),
			order(r.Drivers, a.Driver)-order(r.Drivers, b.Driver),
			order(r.Topologies, a.Topology)-order(r.Topologies, b.Topology),
			order(serverNames, a.Server)-order(serverNames, b.Server),
			strings.Compare(a.Server, b.Server),
		)
	})
	f.addFailures(r)
	r.Reruns = f.reruns
	r.OK = len(r.Failures) == 0
	for _, c := range r.Cells {
		r.OK = r.OK && c.Status.OK()
	}
	for _, c := range r.Checks {
		r.OK = r.OK && c.Status != Fail
	}
	return r
}

// cellAt decides a cell from the most specific test that spoke for it:
// the cell's own, else its cell group's, else its column's. A group
// speaks for a primitive only when none of its primitives ran (it was
// skipped, or failed before them); else the primitive is missing.
func cellAt(k cellKey, at map[cellKey]*test, ran map[cellKey]bool, cases []Case) Cell {
	c := Cell{Driver: k.driver, Server: k.server, Topology: k.topology, Strategy: k.strategy, Primitive: k.primitive, Cases: cases}
	slices.SortFunc(c.Cases, func(a, b Case) int { return strings.Compare(a.Name, b.Name) })
	group, column := k, k
	group.primitive, group.level = "", 5
	column.strategy, column.primitive, column.level = "", "", 4
	t := at[k]
	switch {
	case t != nil:
	case at[group] != nil && !ran[group]:
		t = at[group]
	case at[column] != nil:
		t = at[column]
	case at[group] != nil:
		c.Status, c.Reason = Missing, "the cell ran, but not this primitive"
		return c
	default:
		c.Status, c.Reason = Missing, "the suite did not report this cell"
		return c
	}
	// A group's own time leaves out its cases, which run in parallel
	// after it returns: the longest case is the cell's time.
	c.Status, c.Seconds = t.status(), t.elapsed
	for _, cs := range c.Cases {
		c.Seconds = max(c.Seconds, cs.Seconds)
	}
	text, _ := t.reason()
	switch {
	case t.action == "run":
		c.Reason = "did not finish: the test binary exited under it"
	case c.Status == NA || c.Status == Skipped:
		c.Reason = text
	case c.Status == Pass && t != at[k]:
		c.Status, c.Reason = Missing, "the cell ran none of its primitives"
	case c.Status == Fail && t != at[k]:
		c.Reason = "the cell failed before this primitive ran: " + text
	case c.Status == Fail:
		var failed []string
		for _, cs := range c.Cases {
			if cs.Status == Fail {
				failed = append(failed, cs.Name)
			}
		}
		c.Reason = "failed: " + strings.Join(failed, ", ")
		if len(failed) == 0 {
			c.Reason = "failed: " + text
		}
	case c.Status == Pass:
		var na []string
		for _, cs := range c.Cases {
			if cs.Status == NA {
				na = append(na, cs.Name+": "+cs.Reason)
			}
		}
		if len(na) > 0 {
			c.Reason = "cases not applicable: " + strings.Join(na, "; ")
		}
	}
	return c
}

// addCheck merges a test outside the cells into the checks: the leaves
// only (a group's outcome is its subtests'). A check runs in every job,
// but usually applies on one server only (it needs that server's nodes),
// so across jobs a failure wins, then a pass, then a skip without an n/a
// reason, then n/a.
func (f *folder) addCheck(r *Result, t *test, driver string) {
	name := check(t.name)
	if name == "" || f.groupAnywhere(t.name) {
		return
	}
	text, _ := t.reason()
	st := t.status()
	if st == Pass || st == Fail {
		text = ""
	}
	for i, c := range r.Checks {
		if c.Driver == driver && c.Name == name {
			if checkRank(st) > checkRank(c.Status) {
				r.Checks[i] = Check{driver, name, st, text, t.elapsed}
			}
			return
		}
	}
	r.Checks = append(r.Checks, Check{driver, name, st, text, t.elapsed})
}

// groupAnywhere reports whether the test has subtests in some job: then
// it is a group, also in the jobs where it was skipped before its subtests.
func (f *folder) groupAnywhere(name string) bool {
	for j := range f.jobs {
		if f.hasChild[testKey{j, name}] {
			return true
		}
	}
	return false
}

func checkRank(s Status) int { return slices.Index([]Status{NA, Skipped, Pass, Fail}, s) }

// parents returns, per job, the names of the tests that have subtests,
// and of those with a failed subtest.
func (f *folder) parents() (hasChild, childFailed map[testKey]bool) {
	hasChild, childFailed = map[testKey]bool{}, map[testKey]bool{}
	for _, k := range f.order {
		t := f.tests[k]
		for i := strings.LastIndexByte(t.name, '/'); i > 0; i = strings.LastIndexByte(t.name[:i], '/') {
			p := testKey{t.job, t.name[:i]}
			hasChild[p] = true
			if t.status() == Fail {
				childFailed[p] = true
			}
		}
	}
	return hasChild, childFailed
}

// addFailures lists every test that failed on its own account (no
// subtest of it failed), and every job that failed with no failed test
// (a build error, a panic, a timeout).
func (f *folder) addFailures(r *Result) {
	failedIn := map[int]bool{}
	for _, k := range f.order {
		t := f.tests[k]
		if t.status() != Fail {
			continue
		}
		failedIn[t.job] = true
		if !f.childFailed[k] {
			out := t.output
			if t.action == "run" {
				out = append(slices.Clone(out), "(did not finish: the test binary exited under it)")
			}
			r.Failures = append(r.Failures, Failure{Package: t.pkg, Test: t.name, Output: out})
		}
	}
	for j, jb := range f.jobs {
		if jb.action != "pass" && !failedIn[j] {
			out := jb.output
			if jb.action == "" {
				out = append(slices.Clone(out), fmt.Sprintf("(%s on %s: the test binary reported no result)", jb.pkg, jb.server))
			}
			r.Failures = append(r.Failures, Failure{Package: jb.pkg, Output: out})
		}
	}
}

func sortedKeys[V any](m map[string]V, by func(a, b V) int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return by(m[a], m[b]) })
	return keys
}
