package matrix

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Config is one run of the matrix.
type Config struct {
	// Dir is the root of the redlock module, where the suite is built.
	Dir     string
	Servers []Server
	Dims    Dimensions
	// Race builds the test binaries with the race detector.
	Race bool
	// Run narrows the cells: a -test.run pattern below TestConformance,
	// e.g. "goredis/miniredis/single/Poll/Mutex". Cells it leaves out are
	// not expected.
	Run string
	// Parallel is how many test binaries run at once.
	Parallel int
	// Cases is how many cases each binary runs at once (-test.parallel);
	// 0 leaves go test's default, GOMAXPROCS. A miniredis run has one.
	Cases int
	// Rerun is how many failed cases are run again, each alone, once the
	// rest is done: a case that passes then is listed in Result.Reruns
	// with its first failure, and its cell passes. With more failed cases
	// than that, none is run again.
	Rerun int
	// Progress, if set, is called with the cells that have an outcome and
	// the cells expected, as they change.
	Progress func(done, total int)
	// Log receives what the build prints.
	Log io.Writer
}

// Run builds each driver's conformance test binary (the packages under
// drivers/ whose tests call conformance.Run), runs it once per server with
// the REDLOCK_TEST_* variables set for that server only, and folds the
// events into a Result. It fails only when nothing could be run (the build
// failed); failed cells are in the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	start := time.Now()
	pkgs, err := conformancePackages(ctx, cfg.Dir)
	if err != nil {
		return nil, err
	}
	bin, err := os.MkdirTemp("", "redlock-matrix-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(bin)
	args := []string{"test", "-c", "-o", bin + string(filepath.Separator)}
	if cfg.Race {
		args = append(args, "-race")
	}
	if err := goCmd(ctx, cfg.Dir, cfg.Log, append(args, importPaths(pkgs)...)...); err != nil {
		return nil, fmt.Errorf("building the conformance tests: %w", err)
	}
	f := newFolder(cfg.Dims)
	var runs []*testRun
	for _, p := range pkgs {
		p.bin = filepath.Join(bin, filepath.Base(p.importPath)+".test")
		tops, err := listTests(ctx, p)
		if err != nil {
			return nil, err
		}
		for _, s := range cfg.Servers {
			f.jobs = append(f.jobs, &job{pkg: p.importPath, server: s.Name, tops: len(tops)})
			cases := cfg.Cases
			if s.Name == "miniredis" {
				cases = 1 // see queue
			}
			runs = append(runs, &testRun{pkg: p, server: s, job: len(f.jobs) - 1, cases: cases})
		}
	}
	total := f.expected()
	var mu sync.Mutex
	feed := func(j int, e Event) {
		mu.Lock()
		defer mu.Unlock()
		done := f.add(j, e)
		if cfg.Progress != nil {
			cfg.Progress(min(done, total), total)
		}
	}
	pattern := "^TestConformance"
	if cfg.Run != "" {
		pattern += "/" + cfg.Run
	}
	var wg sync.WaitGroup
	q := newQueue(longestFirst(runs, f.jobs))
	times := make([]RunTime, len(runs))
	for range max(cfg.Parallel, 1) {
		wg.Go(func() {
			for r := q.take(); r != nil; r = q.take() {
				began := time.Now()
				r.run(ctx, pattern, func(e Event) { feed(r.job, e) })
				times[r.job] = RunTime{Package: r.pkg.importPath, Server: r.server.Name,
					Start: began.Sub(start).Seconds(), Seconds: time.Since(began).Seconds()}
				q.done(r)
			}
		})
	}
	wg.Wait()
	for _, k := range f.failedCases(cfg.Rerun) {
		r := *runs[k.job]
		r.cases = 1
		f.rerun(k, func(pattern string, feed func(Event)) { r.run(ctx, pattern, feed) })
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := f.result(cfg.Servers)
	res.Runs = times
	if cfg.Run != "" {
		res.dropMissing()
	}
	res.Seconds = time.Since(start).Seconds()
	return res, nil
}

// longestFirst returns the runs in an order where the longest start first, and the
// short ones fill in at the end beside them: those of packages with more
// top-level tests (driver variants), then those of drivers with a Cluster
// client, whose runs have the cluster cells.
func longestFirst(runs []*testRun, jobs []*job) []*testRun {
	runs = slices.Clone(runs) // runs[i] is job i's
	slices.SortStableFunc(runs, func(a, b *testRun) int {
		if n := jobs[b.job].tops - jobs[a.job].tops; n != 0 {
			return n
		}
		switch {
		case a.pkg.cluster && !b.pkg.cluster:
			return -1
		case b.pkg.cluster && !a.pkg.cluster:
			return 1
		}
		return 0
	})
	return runs
}

// queue hands out the runs in order, but one miniredis run at a time: the
// suite starts miniredis inside the test binary, where it shares the
// binary's CPU and garbage collector with the cases, and two such binaries
// at once make the cases' timeouts on a two-core machine. A worker skips a
// miniredis run while another one is running. For the same reason a
// miniredis run has its cases one at a time: miniredis runs every script
// under one lock, so cases at once wait on each other's scripts, and
// beside a real server's run they time out.
type queue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	pending []*testRun
	mini    bool // a miniredis run is running
}

func newQueue(runs []*testRun) *queue {
	q := &queue{pending: slices.Clone(runs)} // take deletes from it
	q.cond = sync.NewCond(&q.mu)
	return q
}

// take returns the next run a worker may start, waiting while only a
// miniredis run is left and another is running; nil when none is left.
func (q *queue) take() *testRun {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.pending) > 0 {
		for i, r := range q.pending {
			if embedded := r.server.Name == "miniredis"; !embedded || !q.mini {
				q.pending = slices.Delete(q.pending, i, i+1)
				q.mini = q.mini || embedded
				return r
			}
		}
		q.cond.Wait()
	}
	return nil
}

func (q *queue) done(r *testRun) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if r.server.Name == "miniredis" {
		q.mini = false
	}
	q.cond.Broadcast()
}

// dropMissing leaves out the cells a narrowed run never meant to run.
func (r *Result) dropMissing() {
	r.Cells = slices.DeleteFunc(r.Cells, func(c Cell) bool { return c.Status == Missing })
	r.OK = len(r.Failures) == 0
	for _, c := range r.Cells {
		r.OK = r.OK && c.Status.OK()
	}
	for _, c := range r.Checks {
		r.OK = r.OK && c.Status != Fail
	}
}

// pkg is a package whose tests run the conformance suite.
type pkg struct {
	importPath, dir, bin string
	cluster              bool // its harness sets OpenCluster: it has cluster cells
}

func importPaths(pkgs []*pkg) []string {
	var out []string
	for _, p := range pkgs {
		out = append(out, p.importPath)
	}
	return out
}

// conformancePackages lists the driver packages whose tests call
// conformance.Run: one per driver, found rather than listed, so a new
// driver joins the matrix by having the one-line test.
func conformancePackages(ctx context.Context, dir string) ([]*pkg, error) {
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "go", "list", "-f", `{{.ImportPath}}|{{.Dir}}|{{join .TestGoFiles ","}},{{join .XTestGoFiles ","}}`, "./conformance/drivers/...")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("go list ./conformance/drivers/...: %w", err)
	}
	var pkgs []*pkg
	for line := range strings.Lines(out.String()) {
		parts := strings.Split(strings.TrimSpace(line), "|")
		if len(parts) != 3 {
			continue
		}
		for _, file := range strings.Split(parts[2], ",") {
			b, err := os.ReadFile(filepath.Join(parts[1], file))
			if file != "" && err == nil && bytes.Contains(b, []byte("conformance.Run(")) {
				pkgs = append(pkgs, &pkg{importPath: parts[0], dir: parts[1], cluster: bytes.Contains(b, []byte("OpenCluster:"))})
				break
			}
		}
	}
	if len(pkgs) == 0 {
		return nil, errors.New("no package under conformance/drivers/ runs conformance.Run")
	}
	return pkgs, nil
}

// listTests returns the package's top-level conformance tests: one per
// driver (or driver variant, such as go-redis with Protocol 2).
func listTests(ctx context.Context, p *pkg) ([]string, error) {
	cmd := exec.CommandContext(ctx, p.bin, "-test.list", "^TestConformance")
	cmd.Dir = p.dir
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s -test.list: %w", p.importPath, err)
	}
	var tops []string
	for line := range strings.Lines(string(out)) {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "TestConformance") {
			tops = append(tops, line)
		}
	}
	return tops, nil
}

// testRun is one test binary run on one server.
type testRun struct {
	pkg    *pkg
	server Server
	job    int
	cases  int // -test.parallel; 0: the default
}

// run runs the binary under test2json, handing each event to feed. A
// binary that fails to start is reported as a package event with output,
// so it shows among the failures.
func (r *testRun) run(ctx context.Context, pattern string, feed func(Event)) {
	args := []string{"tool", "test2json", "-t", "-p", r.pkg.importPath,
		r.pkg.bin, "-test.v=test2json", "-test.run", pattern, "-test.count=1", "-test.timeout=20m"}
	if r.cases > 0 {
		args = append(args, "-test.parallel="+strconv.Itoa(r.cases))
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Env = r.pkg.dir, r.server.env(os.Environ())
	ownGroup(cmd)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err == nil {
		err = cmd.Start()
	}
	if err != nil {
		feed(Event{Action: "output", Package: r.pkg.importPath, Output: err.Error()})
		feed(Event{Action: "fail", Package: r.pkg.importPath})
		return
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			e = Event{Action: "output", Package: r.pkg.importPath, Output: sc.Text()}
		}
		feed(e)
	}
	if err := cmd.Wait(); err != nil && stderr.Len() > 0 {
		feed(Event{Action: "output", Package: r.pkg.importPath, Output: stderr.String()})
	}
}

// env returns base with the suite's server variables set for s alone (see
// testenv.Servers) and CI unset: the run says which servers it
// has, and checks itself that every cell it expects reports.
func (s Server) env(base []string) []string {
	out := slices.DeleteFunc(slices.Clone(base), func(kv string) bool {
		return strings.HasPrefix(kv, "REDLOCK_TEST_") || strings.HasPrefix(kv, "CI=")
	})
	switch s.Name {
	case "redis7":
		out = append(out, "REDLOCK_TEST_NODES="+strings.Join(s.Nodes, ","))
		if len(s.Cluster) > 0 {
			out = append(out, "REDLOCK_TEST_CLUSTER="+strings.Join(s.Cluster, ","))
		}
	case "redis8":
		out = append(out, "REDLOCK_TEST_REDIS8_NODES="+strings.Join(s.Nodes, ","))
		if len(s.Cluster) > 0 {
			out = append(out, "REDLOCK_TEST_REDIS8_CLUSTER="+strings.Join(s.Cluster, ","))
		}
	case "valkey9":
		out = append(out, "REDLOCK_TEST_VALKEY_NODES="+strings.Join(s.Nodes, ","))
		if len(s.Cluster) > 0 {
			out = append(out, "REDLOCK_TEST_VALKEY_CLUSTER="+strings.Join(s.Cluster, ","))
		}
	case "miniredis":
		out = append(out, "REDLOCK_TEST_MINIREDIS=1")
	}
	return out
}

// goCmd runs the go command in dir, its output to log.
func goCmd(ctx context.Context, dir string, log io.Writer, args ...string) error {
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, log, log
	return cmd.Run()
}
