package matrix

import (
	"strings"
	"testing"
)

// failedOnce folds a job in which one Mutex case of two failed, then runs
// that case again through a fake binary that reports again.
func failedOnce(t *testing.T, again, jobOutput string) (*Result, string) {
	t.Helper()
	f := newFolder(dims)
	f.jobs = []*job{{pkg: "drivers/goredis", server: "redis7", tops: 1}}
	for _, e := range events("drivers/goredis", `
run TestConformance
run TestConformance/goredis
run `+p+`/single/Notify/Mutex
run `+p+`/single/Notify/Mutex/Exclusive
pass `+p+`/single/Notify/Mutex/Exclusive
run `+p+`/single/Notify/Mutex/Order
output `+p+`/single/Notify/Mutex/Order order.go:1: acquired out of order
fail `+p+`/single/Notify/Mutex/Order
fail `+p+`/single/Notify/Mutex
fail TestConformance/goredis
fail TestConformance
output - FAIL
`+jobOutput+`
fail -`) {
		f.add(0, e)
	}
	var pattern string
	for _, k := range f.failedCases(5) {
		f.rerun(k, func(pat string, feed func(Event)) {
			pattern = pat
			for _, e := range events("drivers/goredis", again) {
				feed(e)
			}
		})
	}
	return f.result([]Server{{Name: "redis7"}}), pattern
}

func TestRerunPassedClearsTheFailure(t *testing.T) {
	res, pattern := failedOnce(t, `
run `+p+`/single/Notify/Mutex/Order
pass `+p+`/single/Notify/Mutex/Order
pass -`, "")
	if want := `^TestConformance$/^goredis$/^redis7$/^single$/^Notify$/^Mutex$/^Order$`; pattern != want {
		t.Errorf("rerun pattern %q, want %q", pattern, want)
	}
	if c, _ := res.Cell("goredis", "redis7", "single", "Notify", "Mutex"); c.Status != Pass {
		t.Errorf("the cell whose failed case passed again: %s (%s), want pass", c.Status, c.Reason)
	}
	if len(res.Failures) != 0 { // OK stays false: the other cells of dims never ran
		t.Errorf("failures %+v: want none", res.Failures)
	}
	if len(res.Reruns) != 1 || !res.Reruns[0].Passed || !strings.Contains(strings.Join(res.Reruns[0].Output, "\n"), "out of order") {
		t.Errorf("reruns %+v: want the case, passed, with its first failure", res.Reruns)
	}
	if !strings.Contains(res.Summary(), "1 failed cases passed when run again alone") {
		t.Errorf("summary %q does not say a case passed only when run again", res.Summary())
	}
}

func TestRerunFailedAgainStaysFailed(t *testing.T) {
	res, _ := failedOnce(t, `
run `+p+`/single/Notify/Mutex/Order
fail `+p+`/single/Notify/Mutex/Order`, "")
	if c, _ := res.Cell("goredis", "redis7", "single", "Notify", "Mutex"); c.Status != Fail || res.OK {
		t.Errorf("the cell whose case failed twice: %s, OK %v; want failed", c.Status, res.OK)
	}
}

func TestRerunLeavesAJobThatFailedOnItsOwn(t *testing.T) {
	res, _ := failedOnce(t, `
run `+p+`/single/Notify/Mutex/Order
pass `+p+`/single/Notify/Mutex/Order
pass -`, "output - goleak: found unexpected goroutines")
	if res.OK || len(res.Failures) != 1 || res.Failures[0].Test != "" {
		t.Errorf("OK %v, failures %+v: want the job's own failure (a leak), which no rerun answers", res.OK, res.Failures)
	}
}

func TestRerunWhoseRunFailedAfterTheCaseStaysFailed(t *testing.T) {
	res, _ := failedOnce(t, `
run `+p+`/single/Notify/Mutex/Order
pass `+p+`/single/Notify/Mutex/Order
output - goleak: found unexpected goroutines
fail -`, "")
	if c, _ := res.Cell("goredis", "redis7", "single", "Notify", "Mutex"); c.Status != Fail || len(res.Reruns) != 1 || res.Reruns[0].Passed {
		t.Errorf("a case that passed in a run that then leaked: cell %s, reruns %+v; want failed", c.Status, res.Reruns)
	}
}

func TestNoRerunsBeyondTheLimit(t *testing.T) {
	f := newFolder(dims)
	f.jobs = []*job{{pkg: "drivers/goredis", server: "redis7", tops: 1}}
	for _, e := range events("drivers/goredis", `
run `+p+`/single/Notify/Mutex/A
fail `+p+`/single/Notify/Mutex/A
run `+p+`/single/Notify/Mutex/B
fail `+p+`/single/Notify/Mutex/B`) {
		f.add(0, e)
	}
	if got := f.failedCases(1); got != nil {
		t.Errorf("with two failed cases and a limit of one, rerun %v; want none", got)
	}
	if got := f.failedCases(2); len(got) != 2 {
		t.Errorf("with two failed cases and a limit of two, rerun %v; want both", got)
	}
}

// TestQueueLeavesTheRunsAlone: the runs handed to the queue are the ones a
// rerun looks up by job after the queue emptied.
func TestQueueLeavesTheRunsAlone(t *testing.T) {
	runs := []*testRun{{job: 0}, {job: 1}}
	q := newQueue(runs)
	for q.take() != nil {
	}
	for i, r := range runs {
		if r == nil || r.job != i {
			t.Fatalf("runs[%d] is %v after the queue emptied, want job %d", i, r, i)
		}
	}
}
