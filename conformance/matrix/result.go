// Package matrix runs the conformance suite (package conformance) as the
// matrix of cells it is made of, primitive × wait strategy by driver ×
// topology × server, and renders the result: the engine of `redlock
// matrix`.
//
// There is one suite. The matrix does not re-implement any case: it runs
// each driver's TestConformance test binary with the REDLOCK_TEST_*
// variables pointing at the servers of the run, reads the test2json event
// stream, and folds it into cells by the subtests' names, which read
// TestConformance[Variant]/<driver>/<server>/<topology>/<strategy>/<Primitive>/<Case>.
// A cell that cannot apply is a subtest the suite skips with "n/a: " and
// the reason (conformance/cells.go); any other skip, and any cell that
// never reported, counts as a failure, so nothing is shown as passed that
// did not run.
package matrix

// Status is the outcome of a cell, a case or a check.
type Status string

const (
	Pass Status = "pass"
	Fail Status = "fail"
	// NA: the cell cannot apply; Reason says why.
	NA Status = "n/a"
	// Skipped: skipped without an n/a reason. Counts as a failure.
	Skipped Status = "skipped"
	// Missing: expected, but the suite never reported it. Counts as a
	// failure.
	Missing Status = "missing"
)

// OK reports whether s is a success: passed, or not applicable.
func (s Status) OK() bool { return s == Pass || s == NA }

// Cell is one primitive with one wait strategy, run by one driver on one
// topology of one server.
type Cell struct {
	Driver    string  `json:"driver"`
	Server    string  `json:"server"`
	Topology  string  `json:"topology"`
	Strategy  string  `json:"strategy"`
	Primitive string  `json:"primitive"`
	Status    Status  `json:"status"`
	Reason    string  `json:"reason,omitempty"`
	Seconds   float64 `json:"seconds"`
	Cases     []Case  `json:"cases,omitempty"`
}

// Case is one case of a cell (a subtest of the primitive's group).
type Case struct {
	Name    string  `json:"name"`
	Status  Status  `json:"status"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Check is a test of the suite outside the cells, such as a driver's
// BadInput or a server's NativeDetection.
type Check struct {
	Driver  string  `json:"driver"`
	Name    string  `json:"name"`
	Status  Status  `json:"status"`
	Reason  string  `json:"reason,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Failure is a failed test, or a test binary that failed on its own (a
// build error, a panic), with what it printed.
type Failure struct {
	Package string   `json:"package"`
	Test    string   `json:"test,omitempty"`
	Output  []string `json:"output"`
}

// RunTime is when one test binary ran on one server, in seconds from the
// start of the matrix (its build included): where the matrix's time goes.
type RunTime struct {
	Package string  `json:"package"`
	Server  string  `json:"server"`
	Start   float64 `json:"start"`
	Seconds float64 `json:"seconds"`
}

// Server is a server of the run.
type Server struct {
	Name    string   `json:"name"`    // as in the subtests' names: redis7, valkey9, miniredis
	Version string   `json:"version"` // e.g. "Redis 7.0.15", "miniredis (in process)"
	Nodes   []string `json:"nodes,omitempty"`
	Cluster []string `json:"cluster,omitempty"`
}

// Result is a whole run. The name lists give the table's order.
type Result struct {
	Servers    []Server  `json:"servers"`
	Drivers    []string  `json:"drivers"`
	Topologies []string  `json:"topologies"`
	Strategies []string  `json:"strategies"`
	Primitives []string  `json:"primitives"`
	Cells      []Cell    `json:"cells"`
	Checks     []Check   `json:"checks"`
	Failures   []Failure `json:"failures,omitempty"`
	Reruns     []Rerun   `json:"reruns,omitempty"`
	Runs       []RunTime `json:"runs,omitempty"`
	OK         bool      `json:"ok"`
	Seconds    float64   `json:"seconds"`
}

// Cell returns the cell at the coordinates, if the run has it.
func (r *Result) Cell(driver, server, topology, strategy, primitive string) (Cell, bool) {
	for _, c := range r.Cells {
		if c.Driver == driver && c.Server == server && c.Topology == topology && c.Strategy == strategy && c.Primitive == primitive {
			return c, true
		}
	}
	return Cell{}, false
}

// Counts returns how many cells have each status.
func (r *Result) Counts() map[Status]int {
	n := map[Status]int{}
	for _, c := range r.Cells {
		n[c.Status]++
	}
	return n
}
