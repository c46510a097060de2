package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/redlockgo/redlock/conformance"
	"github.com/redlockgo/redlock/conformance/matrix"
	"github.com/redlockgo/redlock/core"
)

// modulePath is the module whose conformance suite the matrix builds.
const modulePath = "github.com/redlockgo/redlock"

// The generated table in docs/matrix.md lies between these markers.
const (
	docsBegin = "<!-- matrix:begin"
	docsEnd   = "<!-- matrix:end -->"
)

func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("matrix", flag.ContinueOnError)
	fs.SetOutput(stderr)
	nodes := fs.String("nodes", "", "existing independent masters, `host:port,...`: Redis and Valkey nodes (told apart by INFO); no local servers are started")
	cluster := fs.String("cluster", "", "seeds `host:port,...` of existing Redis and Valkey Clusters (told apart by INFO; with --nodes of the same server)")
	embedded := fs.Bool("miniredis", true, "also run on embedded miniredis")
	race := fs.Bool("race", false, "build the tests with the race detector (needs cgo and a C compiler)")
	narrow := fs.String("run", "", "only the cells matching `pattern`, as driver/server/topology/strategy/primitive (a go test -run pattern below TestConformance)")
	asJSON := fs.Bool("json", false, "print the result as JSON instead of the table")
	markdown := fs.Bool("markdown", false, "print the table as Markdown")
	docs := fs.Bool("docs", false, "rewrite the generated table in docs/matrix.md with this run's (only when every cell passed or is n/a)")
	parallel := fs.Int("parallel", runtime.NumCPU(), "test binaries run at once")
	cases := fs.Int("cases", runtime.NumCPU(), "cases each test binary runs at once (its -test.parallel): most wait on TTLs and timers, but more at once time their nodes out on a loaded machine")
	rerun := fs.Int("rerun", 8, "run each failed case once more, alone, when at most `n` failed: a cell whose case passes then passes, and the report lists the first failure")
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: redlock matrix [flags]

Runs the conformance suite as a matrix, every primitive × wait strategy by
driver × topology × server, and prints it. With no flags it starts
throwaway servers from redis-server and valkey-server on PATH (if any) and
always runs on embedded miniredis. Exits 1 if any cell failed.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "redlock matrix: unexpected arguments %q\n", fs.Args())
		fs.Usage()
		return 2
	}
	root, err := moduleRoot(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	servers, stop, err := pickServers(ctx, split(*nodes), split(*cluster), *embedded, stderr)
	defer stop()
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	bar := newProgress(stderr)
	res, err := matrix.Run(ctx, matrix.Config{
		Dir:     root,
		Servers: servers,
		Dims: matrix.Dimensions{
			Topologies: conformance.Topologies(),
			Strategies: []string{core.Notify.String(), core.Poll.String()},
			Primitives: conformance.Primitives(),
		},
		Race:     *race,
		Run:      *narrow,
		Parallel: *parallel,
		Cases:    *cases,
		Rerun:    *rerun,
		Progress: bar.set,
		Log:      stderr,
	})
	bar.finish()
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	switch {
	case *asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			fmt.Fprintln(stderr, "redlock matrix:", err)
			return 1
		}
	case *markdown:
		res.WriteMarkdown(stdout)
	default:
		res.WriteText(stdout)
	}
	if *docs {
		if err := rewriteDocs(filepath.Join(root, "docs", "matrix.md"), res); err != nil {
			fmt.Fprintln(stderr, "redlock matrix:", err)
			return 1
		}
		fmt.Fprintln(stderr, "redlock matrix: rewrote the table in docs/matrix.md")
	}
	if !res.OK {
		return 1
	}
	return 0
}

func split(list string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// moduleRoot finds the redlock module of the workspace or module the
// working directory is in: the matrix builds the suite from source, with
// the go command that ran it.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOWORK", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOWORK GOMOD: %w (the matrix needs the go command)", err)
	}
	// The workspace's root module first: the command is a module of its own.
	work, gomod, _ := strings.Cut(strings.TrimRight(string(out), "\n"), "\n")
	candidates := []string{gomod}
	if work != "" && work != "off" {
		candidates = []string{filepath.Join(filepath.Dir(work), "go.mod"), gomod}
	}
	for _, c := range candidates {
		if b, err := os.ReadFile(c); err == nil && bytes.HasPrefix(b, []byte("module "+modulePath+"\n")) {
			return filepath.Dir(c), nil
		}
	}
	return "", fmt.Errorf("run it inside the %s repository: it builds the conformance tests from source", modulePath)
}

// pickServers returns the servers of the run: the given ones, or local
// throwaway ones, and miniredis. stop stops what was started.
func pickServers(ctx context.Context, nodes, cluster []string, embedded bool, log io.Writer) ([]matrix.Server, func(), error) {
	var (
		servers []matrix.Server
		stop    = func() {}
		err     error
	)
	if len(nodes) > 0 || len(cluster) > 0 {
		servers, err = matrix.Existing(ctx, nodes, cluster)
	} else {
		servers, stop, err = matrix.Local(ctx)
		if err == nil && len(servers) == 0 && embedded {
			fmt.Fprintln(log, "redlock matrix: no redis-server or valkey-server on PATH: running on embedded miniredis only")
		}
	}
	if err != nil {
		return nil, stop, err
	}
	for _, s := range servers {
		fmt.Fprintf(log, "redlock matrix: %s: %s, %d masters%s\n", s.Name, s.Version, len(s.Nodes), map[bool]string{true: " and a cluster", false: ""}[len(s.Cluster) > 0])
	}
	if embedded {
		servers = append(servers, matrix.Miniredis())
	}
	if len(servers) == 0 {
		return nil, stop, errors.New("no servers: give --nodes, put redis-server or valkey-server on PATH, or leave --miniredis on")
	}
	return servers, stop, nil
}

// progress is a progress bar over the cells on a terminal, and a line per
// tenth of them elsewhere (a CI log).
type progress struct {
	w     io.Writer
	tty   bool
	mu    sync.Mutex
	bar   *progressbar.ProgressBar
	tenth int
}

func newProgress(w io.Writer) *progress {
	f, ok := w.(*os.File)
	p := &progress{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
	fmt.Fprintln(w, "redlock matrix: building the conformance tests")
	return p
}

func (p *progress) set(done, total int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.tty {
		if t := done * 10 / max(total, 1); t > p.tenth {
			p.tenth = t
			fmt.Fprintf(p.w, "redlock matrix: %d of %d cells\n", done, total)
		}
		return
	}
	if p.bar == nil {
		p.bar = progressbar.NewOptions(total,
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription("conformance cells"),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(false),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionFullWidth())
	}
	p.bar.Set(done)
}

func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
		p.bar.Clear()
	}
}

// rewriteDocs replaces the table between the markers in path
// (docs/matrix.md) with res as Markdown, naming the command that made it.
// It refuses a failed run.
func rewriteDocs(path string, res *matrix.Result) error {
	if !res.OK {
		return fmt.Errorf("not rewriting %s: some cells failed", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	begin := bytes.Index(b, []byte(docsBegin))
	end := bytes.Index(b, []byte(docsEnd))
	if begin < 0 || end < begin {
		return fmt.Errorf("%s has no section between %q and %q", path, docsBegin+" -->", docsEnd)
	}
	var md bytes.Buffer
	fmt.Fprintf(&md, "%s: generated by go run ./cmd/redlock matrix --docs; do not edit -->\n", docsBegin)
	res.WriteMarkdown(&md)
	out := append(append(append([]byte{}, b[:begin]...), md.Bytes()...), b[end:]...)
	return os.WriteFile(path, out, 0o644)
}
