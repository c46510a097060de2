// Command lockbench measures this library side by side with other Redis
// lock libraries for Go, on the same server processes, interleaved: each
// repetition runs every workload for every library in turn. It prints
// Markdown tables (medians over the repetitions, with min–max) and writes
// PNG charts.
//
//	go run ./bench/cmd/lockbench -reps 5 -duration 3s
//
// Workloads:
//   - cycle: one Client takes a free key and releases it, again and again:
//     time, server commands (all, and sent by the Client: the rest run
//     inside scripts) and CPU per cycle.
//   - keys: one Client, several goroutines (-goroutines), each taking a
//     key at random among 1,000 and releasing it at once: throughput, and
//     server CPU per acquisition as acquisitions a second per server core.
//   - contend: Clients contend for one key, each holding it for a hold and
//     asking again at once (-clients, -holds): throughput, acquire latency
//     from the first ask (a give-up is counted and asked again), hand-off
//     (a release's start to the next holder's return), Jain's fairness
//     index over the Clients' acquisitions, and server commands and CPU per
//     acquisition.
//   - primitives: 4 Clients contend for each primitive of this library
//     (for the peers, their lock), holding it 50ms, on one node and on
//     three: ops/s, acquire p50 and p99; a Latch's cycle is a count of 4
//     set, counted down by every Client after the hold, and a wait.
//   - latency: every node behind a toxiproxy of the process's own adding
//     1ms to every reply: the uncontended cycle and the hand-off on one
//     node and on three, for this library with go-redis and the peers
//     that lock on several nodes.
//
// Each repetition first measures the floors: an idle PING's round trip and
// a bare PUBLISH's delivery to a subscriber, both after 20ms idle.
//
// Without -servers it starts -nodes redis-servers of its own on free
// loopback ports, and stops them at the end. With more than one node,
// each lock is taken on a majority of them (Redlock), and the libraries
// that cannot are left out. The primitives and latency workloads use three
// servers whatever -nodes says: it starts as many, or takes the first
// three of -servers.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/schollz/progressbar/v3"

	"github.com/redlockgo/redlock/bench/cmd/lockbench/stats"
)

func main() {
	var (
		workloads = flag.String("workloads", "cycle,contend", "workloads to run: cycle, contend, keys, idle (1,000 waiters on 100 held keys), names (2,000 names held, then released), primitives (every primitive, one node and three), latency (1ms per node, one node and three)")
		gs        = flag.String("goroutines", "1,8,64", "keys: goroutines of the Client (comma-separated)")
		libs      = flag.String("libs", "all", "libraries to run, by id (comma-separated), or all: "+strings.Join(ids(), ", "))
		clients   = flag.String("clients", "10", "Clients contending for the key (comma-separated)")
		holds     = flag.String("holds", "20ms", "how long a holder holds the key (comma-separated)")
		duration  = flag.Duration("duration", 3*time.Second, "duration of each library's run of each workload")
		reps      = flag.Int("reps", 5, "repetitions")
		servers   = flag.String("servers", "", "addresses of servers to use (host:port, comma-separated) instead of starting -nodes")
		nodes     = flag.Int("nodes", 1, "independent masters to start and lock on (Redlock); libraries without it are left out when more than 1")
		bin       = flag.String("redis-server", "redis-server", "the redis-server to start")
		charts    = flag.String("charts", "lockbench-charts", "directory for the PNG charts; empty for none")
	)
	flag.Parse()
	if err := mainErr(*workloads, *libs, *clients, *holds, *gs, *duration, *reps, *servers, *nodes, *bin, *charts); err != nil {
		fmt.Fprintln(os.Stderr, "lockbench:", err)
		os.Exit(1)
	}
}

func ids() []string {
	var s []string
	for _, l := range libraries {
		s = append(s, l.id)
	}
	return s
}

// workload is one table: the cycle, or one contention.
type workload struct {
	name       string
	clients    int           // contend: Clients on one key
	hold       time.Duration // contend
	goroutines int           // keys: goroutines of one Client
	footprint  string        // "idle" or "names": what waiting and holding keep
	sweep      string        // "primitives" or "latency": one node and three, a table of its own
}

func (w workload) contended() bool { return w.clients > 0 }

func (w workload) title() string {
	switch {
	case w.footprint == "idle":
		return fmt.Sprintf("Idle waiters: %d waiters of one Client on %d keys another Client holds, per waiter", idleWaiters, idleKeys)
	case w.footprint == "names":
		return fmt.Sprintf("Footprint: one Client holds %d names at once, then releases them, per name", heldNames)
	case w.contended():
		return fmt.Sprintf("Contention: one key, %d Clients, %v hold", w.clients, w.hold)
	case w.goroutines > 0:
		g := "goroutines"
		if w.goroutines == 1 {
			g = "goroutine"
		}
		return fmt.Sprintf("Throughput: one Client, %d %s over %d keys, no hold", w.goroutines, g, keySpace)
	}
	return "Uncontended cycle: one Client, lock and unlock a free key"
}

// sweepNodes is the number of servers of the primitives and latency
// workloads.
const sweepNodes = 3

// librariesOf are the libraries among selected that run workload w on
// nodes nodes.
func librariesOf(w workload, selected []library, nodes int) []library {
	var ls []library
	for _, l := range selected {
		switch {
		case w.sweep == "primitives",
			w.sweep == "latency" && latencyLibrary(l),
			w.sweep == "" && (nodes == 1 || l.quorum):
			ls = append(ls, l)
		}
	}
	return ls
}

// parseWorkloads are the tables that the flags ask for.
func parseWorkloads(workloads, clients, holds, goroutines string) ([]workload, error) {
	var ws []workload
	for w := range strings.SplitSeq(workloads, ",") {
		switch w {
		case "cycle":
			ws = append(ws, workload{name: "cycle"})
		case "idle", "names":
			ws = append(ws, workload{name: w, footprint: w})
		case "keys":
			for g := range strings.SplitSeq(goroutines, ",") {
				n, err := strconv.Atoi(g)
				if err != nil || n < 1 {
					return nil, fmt.Errorf("-goroutines: %q", g)
				}
				ws = append(ws, workload{name: fmt.Sprintf("keys-%d", n), goroutines: n})
			}
		case "primitives", "latency":
			ws = append(ws, workload{name: w, sweep: w})
		case "contend":
			for c := range strings.SplitSeq(clients, ",") {
				n, err := strconv.Atoi(c)
				if err != nil || n < 1 {
					return nil, fmt.Errorf("-clients: %q", c)
				}
				for h := range strings.SplitSeq(holds, ",") {
					hold, err := time.ParseDuration(h)
					if err != nil {
						return nil, fmt.Errorf("-holds: %v", err)
					}
					ws = append(ws, workload{name: fmt.Sprintf("contend-%d-%v", n, hold), clients: n, hold: hold})
				}
			}
		default:
			return nil, fmt.Errorf("unknown workload %q", w)
		}
	}
	return ws, nil
}

func mainErr(workloads, libs, clients, holds, goroutines string, d time.Duration, reps int, servers string, nodes int, bin, charts string) error {
	ws, err := parseWorkloads(workloads, clients, holds, goroutines)
	if err != nil {
		return err
	}
	var pool []string // the servers; the workloads but the sweeps use the first nodes
	if servers != "" {
		pool = strings.Split(servers, ",")
		nodes = len(pool)
	}
	var selected []library
	for _, l := range libraries {
		if libs == "all" || slices.Contains(strings.Split(libs, ","), l.id) {
			selected = append(selected, l)
		}
	}
	need := nodes
	chosen := make(map[string][]library) // by workload
	for _, w := range ws {
		chosen[w.name] = librariesOf(w, selected, nodes)
		if len(chosen[w.name]) == 0 {
			return fmt.Errorf("no library among %q runs the %s workload with -nodes %d", libs, w.name, nodes)
		}
		if w.sweep != "" {
			need = max(need, sweepNodes)
		}
	}
	if servers != "" && len(pool) < need {
		return fmt.Errorf("the primitives and latency workloads need %d servers: give as many to -servers, or none", sweepNodes)
	}

	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt)
	defer cancel()
	for len(pool) < need {
		a, stop, err := startServer(bin)
		if err != nil {
			return err
		}
		defer stop()
		pool = append(pool, a)
	}
	var admins []*redis.Client
	for _, a := range pool {
		admin := redis.NewClient(&redis.Options{Addr: a})
		defer admin.Close()
		admins = append(admins, admin)
	}
	admin := admins[0]
	addrs := pool[:nodes]
	var proxied []string
	if slices.ContainsFunc(ws, func(w workload) bool { return w.sweep == "latency" }) {
		ps, stop, err := startProxies(pool[:sweepNodes])
		if err != nil {
			return err
		}
		defer stop()
		proxied = ps
	}

	var bar *progressbar.ProgressBar
	total := 0
	for _, w := range ws {
		total += reps * len(chosen[w.name])
	}
	if fi, err := os.Stderr.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
		bar = progressbar.NewOptions(total, progressbar.OptionSetWriter(os.Stderr), progressbar.OptionShowCount(),
			progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())
	}
	runs := make(map[string][][]*run) // by workload, then library: the repetitions
	var fl []floors
	done := 0
	for rep := range reps {
		f, err := measureFloors(ctx, admin)
		if err != nil {
			return err
		}
		fl = append(fl, f)
		for _, w := range ws {
			if runs[w.name] == nil {
				runs[w.name] = make([][]*run, len(chosen[w.name]))
			}
			for i, lib := range chosen[w.name] {
				desc := fmt.Sprintf("rep %d/%d %s %s", rep+1, reps, w.name, lib.id)
				if bar != nil {
					bar.Describe(desc)
				} else {
					fmt.Fprintf(os.Stderr, "lockbench: [%d/%d] %s\n", done+1, total, desc)
				}
				var r *run
				if w.sweep == "primitives" {
					r, err = primitivesOf(ctx, lib, pool[:sweepNodes], admins[:sweepNodes], d)
				} else if w.sweep == "latency" {
					r, err = latencyOf(ctx, lib, proxied, admins[:sweepNodes], d)
				} else if w.footprint != "" {
					r = new(run)
					r.footprint, err = footprintOf(ctx, w.footprint, lib, addrs, admins[:nodes])
				} else if w.contended() {
					r, err = contend(ctx, lib, addrs, admins[:nodes], w.clients, w.hold, d)
				} else if w.goroutines > 0 {
					r, err = keys(ctx, lib, addrs, admins[:nodes], w.goroutines, d)
				} else {
					r, err = cycle(ctx, lib, addrs, admins[:nodes], d)
				}
				if err != nil {
					return fmt.Errorf("%s, %s: %w", w.name, lib.name, err)
				}
				runs[w.name][i] = append(runs[w.name][i], r)
				done++
				if bar != nil {
					bar.Add(1)
				}
				time.Sleep(200 * time.Millisecond) // the server settles
			}
		}
	}
	if bar != nil {
		bar.Finish()
	}
	version, _ := admin.InfoMap(ctx, "server").Result()
	printHeader(os.Stdout, version["Server"]["redis_version"], len(pool), nodes, d, reps)
	printFloors(os.Stdout, fl)
	for _, w := range ws {
		libs := chosen[w.name]
		switch w.sweep {
		case "primitives":
			printPrimitives(os.Stdout, libs, runs[w.name], d)
		case "latency":
			printLatency(os.Stdout, libs, runs[w.name])
		default:
			printTable(os.Stdout, w, d, libs, runs[w.name], fl)
		}
		if charts != "" && (w.contended() || w.sweep == "primitives") {
			if err := writeCharts(charts, w, libs, runs[w.name], d); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "lockbench: charts of %s in %s\n", w.name, charts)
		}
	}
	return nil
}

func printHeader(w io.Writer, redisVersion string, servers, nodes int, d time.Duration, reps int) {
	fmt.Fprintf(w, "lockbench: %s, redis-server %s × %d, GOMAXPROCS %d, %d CPUs, %d repetitions of %v per library and workload, interleaved.\n\n",
		runtime.Version(), redisVersion, servers, runtime.GOMAXPROCS(0), runtime.NumCPU(), reps, d)
	if servers > nodes {
		fmt.Fprintf(w, "The primitives and latency workloads use %d servers, the others the first %d.\n\n", servers, nodes)
	}
	if nodes > 1 {
		fmt.Fprintf(w, "Each lock is taken on a majority of %d independent masters; the server figures are their sums; libraries without Redlock are left out.\n\n", nodes)
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		var vs []string
		for _, m := range bi.Deps {
			switch m.Path {
			case "github.com/go-redsync/redsync/v4", "github.com/bsm/redislock", "github.com/redis/rueidis",
				"github.com/redis/go-redis/v9", "github.com/gomodule/redigo":
				vs = append(vs, m.Path+" "+m.Version)
			}
		}
		fmt.Fprintf(w, "Modules: %s.\n\n", strings.Join(vs, ", "))
	}
}

func printFloors(w io.Writer, fl []floors) {
	var ping, pub []float64
	for _, f := range fl {
		ping = append(ping, us(f.ping))
		pub = append(pub, us(f.publish))
	}
	fmt.Fprintln(w, "### Floors (same run)")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| floor | median | min–max |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, r := range []struct {
		name string
		xs   []float64
	}{{"idle PING round trip (after 20 ms idle)", ping}, {"idle PUBLISH to a subscriber (after 20 ms idle)", pub}} {
		s := stats.Of(r.xs)
		fmt.Fprintf(w, "| %s | %s | %s–%s |\n", r.name, fmtUs(s.Med), fmtUs(s.Lo), fmtUs(s.Hi))
	}
	fmt.Fprintln(w)
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// fmtUs formats microseconds with 2–3 significant digits and a unit.
func fmtUs(v float64) string {
	switch {
	case v >= 1e6:
		return strconv.FormatFloat(v/1e6, 'f', 2, 64) + " s"
	case v >= 1e4:
		return strconv.FormatFloat(v/1e3, 'f', 0, 64) + " ms"
	case v >= 1e3:
		return strconv.FormatFloat(v/1e3, 'f', 1, 64) + " ms"
	default:
		return strconv.FormatFloat(v, 'f', 0, 64) + " µs"
	}
}

// column is one figure of a table, computed per repetition.
type column struct {
	head string
	of   func(r *run, f floors) float64
	fmt  func(float64) string
}

func num(prec int) func(float64) string {
	return func(v float64) string { return strconv.FormatFloat(v, 'f', prec, 64) }
}

func per(v float64, n int) float64 {
	if n == 0 {
		return 0
	}
	return v / float64(n)
}

func columns(w workload, d time.Duration) []column {
	fp := func(head string, of func(*footprint) float64, f func(float64) string) column {
		return column{head, func(r *run, _ floors) float64 {
			if r.footprint == nil { // the library did not finish it in time
				return math.NaN()
			}
			return of(r.footprint)
		}, f}
	}
	switch w.footprint {
	case "idle":
		return []column{
			fp("waiting when measured", func(f *footprint) float64 { return float64(f.waiting) }, num(0)),
			fp("goroutines beyond the waiter's own", func(f *footprint) float64 { return f.goroutines }, num(2)),
			fp("server connections", func(f *footprint) float64 { return f.conns }, num(3)),
			fp("client heap, bytes", func(f *footprint) float64 { return f.heap }, num(0)),
			fp("server memory, bytes", func(f *footprint) float64 { return f.serverMem }, num(0)),
		}
	case "names":
		return []column{
			fp("keys / held name", func(f *footprint) float64 { return f.keys }, num(2)),
			fp("server bytes / held name", func(f *footprint) float64 { return f.serverMem }, num(0)),
			fp("keys left / released name", func(f *footprint) float64 { return f.leftKeys }, num(2)),
			fp("server bytes left / released name", func(f *footprint) float64 { return f.leftMem }, num(0)),
		}
	}
	unit := "acq."
	if !w.contended() && w.goroutines == 0 {
		unit = "cycle"
	}
	cmds := []column{
		{"server commands / " + unit + ", all", func(r *run, _ floors) float64 { return per(float64(r.server.calls), r.acquired) }, num(1)},
		{"sent by the Client", func(r *run, _ floors) float64 { return per(float64(r.sent), r.acquired) }, num(1)},
		{"server CPU / " + unit, func(r *run, _ floors) float64 { return per(us(r.server.cpu), r.acquired) }, fmtUs},
		{"client CPU / " + unit, func(r *run, _ floors) float64 { return per(us(r.client), r.acquired) }, fmtUs},
	}
	if w.goroutines > 0 {
		return append([]column{
			{"acq./s", func(r *run, _ floors) float64 { return float64(r.acquired) / r.elapsed.Seconds() }, num(0)},
			{"acquire p50", func(r *run, _ floors) float64 { return us(stats.Percentile(r.latency, 50)) }, fmtUs},
			{"acquire p99", func(r *run, _ floors) float64 { return us(stats.Percentile(r.latency, 99)) }, fmtUs},
			{"gave up", func(r *run, _ floors) float64 { return float64(r.gaveUp) }, num(0)},
			{"acq./s per server core (10⁶ ÷ server CPU µs)", func(r *run, _ floors) float64 {
				return 1e6 / per(us(r.server.cpu), r.acquired)
			}, num(0)},
		}, cmds...)
	}
	if !w.contended() {
		return append([]column{
			{"time / cycle", func(r *run, _ floors) float64 { return per(us(r.elapsed), r.acquired) }, fmtUs},
			{"× idle PING", func(r *run, f floors) float64 { return per(us(r.elapsed), r.acquired) / us(f.ping) }, num(1)},
			{"cycle p99", func(r *run, _ floors) float64 { return us(stats.Percentile(r.latency, 99)) }, fmtUs},
		}, cmds...)
	}
	cs := []column{
		{"acq./s", func(r *run, _ floors) float64 { return float64(r.inWindow) / d.Seconds() }, num(0)},
	}
	if w.hold > 0 {
		cs = append(cs, column{"of 1/hold", func(r *run, _ floors) float64 {
			return float64(r.inWindow) * float64(w.hold) / float64(d)
		}, num(3)})
	}
	cs = append(cs,
		column{"acquire p50", func(r *run, _ floors) float64 { return us(stats.Percentile(r.latency, 50)) }, fmtUs},
		column{"acquire p99", func(r *run, _ floors) float64 { return us(stats.Percentile(r.latency, 99)) }, fmtUs},
		column{"acquire max", func(r *run, _ floors) float64 { return us(stats.Percentile(r.latency, 100)) }, fmtUs},
		column{"gave up", func(r *run, _ floors) float64 { return float64(r.gaveUp) }, num(0)},
		column{"left waiting", func(r *run, _ floors) float64 { return float64(r.left) }, num(0)},
		column{"hand-off p50", func(r *run, _ floors) float64 { return us(stats.Percentile(r.handoff, 50)) }, fmtUs},
		column{"× idle PUBLISH", func(r *run, f floors) float64 { return us(stats.Percentile(r.handoff, 50)) / us(f.publish) }, num(2)},
		column{"hand-off p99", func(r *run, _ floors) float64 { return us(stats.Percentile(r.handoff, 99)) }, fmtUs},
		column{"Jain", func(r *run, _ floors) float64 { return stats.Jain(r.shares) }, num(3)},
	)
	return append(cs, cmds...)
}

func printTable(w io.Writer, wl workload, d time.Duration, libs []library, runs [][]*run, fl []floors) {
	cs := columns(wl, d)
	fmt.Fprintf(w, "### %s\n\n| library |", wl.title())
	for _, c := range cs {
		fmt.Fprintf(w, " %s |", c.head)
	}
	fmt.Fprint(w, "\n|---|")
	for range cs {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	for i, lib := range libs {
		fmt.Fprintf(w, "| %s |", lib.name)
		for _, c := range cs {
			var xs []float64
			for rep, r := range runs[i] {
				if x := c.of(r, fl[rep]); !math.IsNaN(x) {
					xs = append(xs, x)
				}
			}
			fmt.Fprintf(w, " %s |", spread(xs, c.fmt))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
}

// spread is the median of xs and, where they differ, its range; a dash
// when xs is empty.
func spread(xs []float64, f func(float64) string) string {
	s := stats.Of(xs)
	switch {
	case len(xs) == 0:
		return "—"
	case f(s.Lo) == f(s.Hi):
		return f(s.Med)
	}
	return fmt.Sprintf("%s (%s–%s)", f(s.Med), f(s.Lo), f(s.Hi))
}

func writeCharts(dir string, wl workload, libs []library, runs [][]*run, d time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if wl.sweep == "primitives" {
		return primitivesChart(filepath.Join(dir, "primitives-throughput.png"), libs, runs, d)
	}
	var acq, hand []series
	for i, lib := range libs {
		a, h := series{name: lib.name}, series{name: lib.name}
		for _, r := range runs[i] {
			a.ds = append(a.ds, r.latency...)
			h.ds = append(h.ds, r.handoff...)
		}
		acq, hand = append(acq, a), append(hand, h)
	}
	sub := fmt.Sprintf("%d Clients, %v hold", wl.clients, wl.hold)
	if err := cdfChart(filepath.Join(dir, wl.name+"-acquire-cdf.png"), "Acquire latency, one key, "+sub,
		"acquire latency from the first ask (ms, log scale)", acq); err != nil {
		return err
	}
	return histGrid(filepath.Join(dir, wl.name+"-handoff.png"), "hand-off, release to the next holder's return (ms, log scale)", hand)
}
