package matrix

import (
	"regexp"
	"slices"
	"strings"
)

// Rerun is a case that failed and was run again, alone, on the same
// server. It stays failed unless that run passed.
type Rerun struct {
	Package string   `json:"package"`
	Test    string   `json:"test"`
	Passed  bool     `json:"passed"`
	Output  []string `json:"output"` // the first run's
	Again   []string `json:"again"`  // the second run's
}

// failedCases returns the cases (leaves below a cell) that failed on their
// own account in jobs that ended, or nil when there are more than limit:
// so many failures are not the noise of a loaded machine.
func (f *folder) failedCases(limit int) []testKey {
	hasChild, childFailed := f.parents()
	died := map[int]bool{}
	var out []testKey
	for _, k := range f.order {
		t := f.tests[k]
		if t.action == "run" {
			died[k.job] = true
		}
		if t.status() == Fail && !childFailed[k] && !hasChild[k] && f.dims.parse(t.name).level == 7 {
			out = append(out, k)
		}
	}
	out = slices.DeleteFunc(out, func(k testKey) bool { return died[k.job] })
	if len(out) > limit {
		return nil
	}
	return out
}

// rerun runs the failed case k once more through run (its job's binary
// and server, with a -test.run pattern), alone, and notes whether it
// passed this time. When it did, the case and every test above it that
// failed only through it pass, and so does the job if nothing else of it
// failed.
func (f *folder) rerun(k testKey, run func(pattern string, feed func(Event))) {
	t := f.tests[k]
	again := newFolder(f.dims)
	again.jobs = []*job{{pkg: t.pkg}}
	run(exactPattern(t.name), func(e Event) { again.add(0, e) })
	second := again.tests[testKey{0, t.name}]
	// The whole run must pass, not only the case: a leak or a panic after
	// it is a failure the first run may have hidden.
	rr := Rerun{Package: t.pkg, Test: t.name, Output: t.output,
		Passed: second != nil && second.status() == Pass && again.jobs[0].action == "pass"}
	if second != nil {
		rr.Again = second.output
	}
	f.reruns = append(f.reruns, rr)
	if !rr.Passed {
		return
	}
	t.action = "pass"
	// Up the tree, each test that failed through this case alone passes;
	// go test may not have named every level (a parent with no own line).
	for name := t.name; strings.Contains(name, "/"); {
		name = name[:strings.LastIndexByte(name, '/')]
		if f.anyFailed(k.job, name+"/") {
			break
		}
		if p := f.tests[testKey{k.job, name}]; p != nil && p.action == "fail" {
			p.action = "pass"
		}
	}
	if jb := f.jobs[k.job]; jb.action == "fail" && !f.anyFailed(k.job, "") && onlyVerdicts(jb.output) {
		jb.action = "pass"
	}
}

// anyFailed reports whether a test of job whose name starts with prefix
// failed ("" for any test of the job).
func (f *folder) anyFailed(job int, prefix string) bool {
	for k, t := range f.tests {
		if k.job == job && strings.HasPrefix(k.name, prefix) && t.status() == Fail {
			return true
		}
	}
	return false
}

// onlyVerdicts reports whether a job's own output is no more than the
// lines go test prints for a result: anything else (a leak report, a
// panic) is a failure of the job a rerun of a case does not answer.
func onlyVerdicts(lines []string) bool {
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l != "" && l != "FAIL" && l != "PASS" && !strings.HasPrefix(l, "FAIL\t") && !strings.HasPrefix(l, "ok ") && !strings.HasPrefix(l, "exit status") {
			return false
		}
	}
	return true
}

// exactPattern is a -test.run pattern that matches the test called name
// and nothing else (but its subtests).
func exactPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}
