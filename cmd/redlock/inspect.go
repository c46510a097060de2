package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/redlockgo/redlock/core"
)

const inspectUsage = `usage: redlock inspect [flags] NAME...

Prints who holds each lock NAME, with which fencing token, for how long
yet without an extension, on how many nodes, and who waits: what a
majority of nodes agree on, and each node that did not answer. It reads
the servers' state with read-only scripts and changes nothing. A name
nobody holds is free. Every NAME is of the --kind given.

Exit status: 0 if every node answered; 1 if a node did not answer (the
output says which) or the servers could not be read; 2 for a usage error.

Examples:
  export REDLOCK_NODES=redis://localhost:6379
  redlock inspect payouts
  redlock inspect --kind semaphore encoder
  redlock inspect --json payouts reports | jq '.[] | {name, holder, ttl_ms}'

Flags:
`

type inspectFlags struct {
	conn    connFlags
	kind    string
	permits int
	json    bool
}

func runInspect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f inspectFlags
	f.conn.register(fs, "strategy") // inspect waits for nothing
	fs.StringVar(&f.kind, "kind", "mutex", "the primitive: mutex, fair (FairMutex), rw (RWMutex) or semaphore")
	fs.IntVar(&f.permits, "permits", 0, "for --kind semaphore: the number of permits the application makes the Semaphore with, shown when the servers store none (SetPermits)")
	fs.BoolVar(&f.json, "json", false, "print one JSON array, an object per name (see docs/command.md)")
	fs.Usage = func() {
		fmt.Fprint(stderr, inspectUsage)
		fs.PrintDefaults()
	}
	usageError := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "redlock inspect: "+format+"\n\n", a...)
		fs.Usage()
		return 2
	}
	names, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	switch {
	case len(names) == 0:
		return usageError("want at least one NAME")
	case f.kind != "mutex" && f.kind != "fair" && f.kind != "rw" && f.kind != "semaphore":
		return usageError("--kind %q: want mutex, fair, rw or semaphore", f.kind)
	case f.permits < 0 || f.permits > 0 && f.kind != "semaphore":
		return usageError("--permits %d: want a number of permits ≥ 1, with --kind semaphore", f.permits)
	}
	urls, open, err := f.conn.resolve()
	if err != nil {
		return usageError("%v", err)
	}
	client, closeClient, err := connect(open, urls, core.WithKeyPrefix(f.conn.prefix), core.WithWaitStrategy(core.Poll))
	if errors.Is(err, core.ErrInvalid) {
		return usageError("%v", err)
	}
	if err != nil {
		fmt.Fprintf(stderr, "redlock inspect: %v\n", err)
		return 1
	}
	defer closeClient()

	reports := make([]report, len(names))
	for i, name := range names {
		reports[i] = f.inspect(ctx, client, name, urls)
		if err := reports[i].head().cause; errors.Is(err, core.ErrInvalid) {
			return usageError("%s: %v", name, err)
		}
	}
	if f.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(reports); err != nil {
			fmt.Fprintf(stderr, "redlock inspect: %v\n", err)
			return 1
		}
	} else {
		printReports(stdout, f.kind, reports)
	}
	for _, r := range reports {
		if r.head().failed() {
			return 1
		}
	}
	return 0
}

// parseInterspersed parses fs's flags wherever they stand among the
// arguments, so that "inspect NAME --json" works, and returns the other
// arguments; every argument after "--" is one of them.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return rest, nil
		}
		if parsed := len(args) - fs.NArg(); parsed > 0 && args[parsed-1] == "--" {
			return append(rest, fs.Args()...), nil
		}
		rest, args = append(rest, fs.Arg(0)), fs.Args()[1:]
	}
}

// report is one name's state, as printed: a mutexReport, rwReport or
// semaphoreReport.
type report interface{ head() reportHead }

func (f *inspectFlags) inspect(ctx context.Context, c *core.Client, name string, urls []string) report {
	switch f.kind {
	case "fair":
		s, err := c.FairMutex(name).State(ctx)
		return newMutexReport("fair", s, err, urls)
	case "rw":
		s, err := c.RWMutex(name).State(ctx)
		return newRWReport(s, err, urls)
	case "semaphore":
		s, err := c.Semaphore(name, f.permits).State(ctx)
		return newSemaphoreReport(s, err, urls)
	}
	s, err := c.Mutex(name).State(ctx)
	return newMutexReport("mutex", s, err, urls)
}

// reportHead is what every report starts with. State is "unknown" when
// too few nodes answered; otherwise "held", "free" or "split" (some node
// has a holder, but no majority agrees on one) for a lock, and "free",
// "in_use" or "full" for a semaphore.
type reportHead struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	cause error
	nodes []nodeHead
}

func (h reportHead) head() reportHead { return h }

// failed reports that the state is unknown or a node did not answer.
func (h reportHead) failed() bool {
	for _, n := range h.nodes {
		if n.Error != "" {
			return true
		}
	}
	return h.cause != nil
}

func newHead(name, kind string, err error) reportHead {
	h := reportHead{Name: name, Kind: kind, cause: err}
	if err != nil {
		h.Error, h.State = err.Error(), "unknown"
	}
	return h
}

// nodeHead is what every node's part of a report starts with: the node's
// URL without its password, and its error when it did not answer.
type nodeHead struct {
	Node  string `json:"node"`
	Error string `json:"error,omitempty"`
}

func newNodeHead(url string, err error) nodeHead {
	h := nodeHead{Node: redact(url)}
	if err != nil {
		// The library's error names the node by its number and driver;
		// the URL says more.
		if inner := errors.Unwrap(err); inner != nil {
			err = inner
		}
		h.Error = err.Error()
	}
	return h
}

type waiterReport struct {
	ID       string `json:"id"`
	LapsesMs int64  `json:"lapses_ms"`
}

func newWaiterReports(ws []core.Waiter) []waiterReport {
	var out []waiterReport
	for _, w := range ws {
		out = append(out, waiterReport{w.ID, w.Lapses.Milliseconds()})
	}
	return out
}

// holding is what a Mutex's or FairMutex's report says of its holder, for
// the name and for each node.
type holding struct {
	Holder   string `json:"holder"`
	Metadata string `json:"metadata,omitempty"`
	Owned    bool   `json:"owned"`
	Holds    int    `json:"holds"`
	Token    uint64 `json:"token"`
	TTLMs    int64  `json:"ttl_ms"`
	Waiting  int    `json:"waiting"`
}

type mutexReport struct {
	reportHead
	holding
	Nodes   int               `json:"nodes"`
	PerNode []mutexNodeReport `json:"per_node"`
}

type mutexNodeReport struct {
	nodeHead
	holding
	Line []waiterReport `json:"line,omitempty"`
}

func newMutexReport(kind string, s core.MutexState, err error, urls []string) *mutexReport {
	r := &mutexReport{reportHead: newHead(s.Name, kind, err), Nodes: s.Nodes,
		holding: holding{s.Holder, s.Metadata, s.Owned, s.Holds, s.Token, s.TTL.Milliseconds(), s.Waiting}}
	anyHolder := false
	for i, n := range s.PerNode {
		r.nodes = append(r.nodes, newNodeHead(urls[i], n.Err))
		r.PerNode = append(r.PerNode, mutexNodeReport{nodeHead: r.nodes[i], Line: newWaiterReports(n.Line),
			holding: holding{n.Holder, metadataOf(n.Holder, n.Owned), n.Owned, n.Holds, n.Token, n.TTL.Milliseconds(), n.Waiting}})
		anyHolder = anyHolder || n.Holder != ""
	}
	if err == nil {
		r.State = lockState(s.Locked, anyHolder)
	}
	return r
}

// metadataOf is the metadata of a node's holder, none for an owner.
func metadataOf(holder string, owned bool) string {
	if owned {
		return ""
	}
	return core.MetadataOf(holder)
}

func lockState(locked, anyHolder bool) string {
	switch {
	case locked:
		return "held"
	case anyHolder:
		return "split"
	}
	return "free"
}

type readerReport struct {
	ID       string `json:"id"`
	Metadata string `json:"metadata,omitempty"`
	TTLMs    int64  `json:"ttl_ms"`
}

func newReaderReports(rs []core.Reader) []readerReport {
	out := []readerReport{}
	for _, rd := range rs {
		out = append(out, readerReport{rd.ID, rd.Metadata, rd.TTL.Milliseconds()})
	}
	return out
}

type rwReport struct {
	reportHead
	Writer         string         `json:"writer"`
	Metadata       string         `json:"metadata,omitempty"`
	Token          uint64         `json:"token"`
	TTLMs          int64          `json:"ttl_ms"`
	Nodes          int            `json:"nodes"`
	ReadLeases     []readerReport `json:"read_leases"`
	WaitingWriters int            `json:"waiting_writers"`
	WaitingReaders int            `json:"waiting_readers"`
	PerNode        []rwNodeReport `json:"per_node"`
}

type rwNodeReport struct {
	nodeHead
	Writer         string         `json:"writer"`
	Metadata       string         `json:"metadata,omitempty"`
	Token          uint64         `json:"token"`
	TTLMs          int64          `json:"ttl_ms"`
	Readers        int            `json:"readers"`
	ReadLeases     []readerReport `json:"read_leases"`
	WaitingWriters int            `json:"waiting_writers"`
	Writers        []waiterReport `json:"writers,omitempty"`
	WaitingReaders int            `json:"waiting_readers"`
}

func newRWReport(s core.RWMutexState, err error, urls []string) *rwReport {
	r := &rwReport{reportHead: newHead(s.Name, "rw", err), Writer: s.Writer, Metadata: s.Metadata, Token: s.Token, TTLMs: s.TTL.Milliseconds(),
		Nodes: s.Nodes, ReadLeases: newReaderReports(s.Readers), WaitingWriters: s.WaitingWriters, WaitingReaders: s.WaitingReaders}
	anyHolder := false
	for i, n := range s.PerNode {
		r.nodes = append(r.nodes, newNodeHead(urls[i], n.Err))
		r.PerNode = append(r.PerNode, rwNodeReport{nodeHead: r.nodes[i], Writer: n.Writer, Metadata: core.MetadataOf(n.Writer), Token: n.Token,
			TTLMs: n.TTL.Milliseconds(), Readers: n.Readers, ReadLeases: newReaderReports(n.ReadLeases),
			WaitingWriters: n.WaitingWriters, Writers: newWaiterReports(n.Writers), WaitingReaders: n.WaitingReaders})
		anyHolder = anyHolder || n.Writer != "" || n.Readers > 0
	}
	if err == nil {
		r.State = lockState(s.Locked || len(s.Readers) > 0, anyHolder)
	}
	return r
}

type permitReport struct {
	Holder   string `json:"holder"`
	Metadata string `json:"metadata,omitempty"`
	Permits  []int  `json:"permits"`
	TTLMs    int64  `json:"ttl_ms"`
}

func newPermitReports(ls []core.PermitLease) []permitReport {
	out := []permitReport{}
	for _, l := range ls {
		out = append(out, permitReport{l.Holder, l.Metadata, l.Permits, l.TTL.Milliseconds()})
	}
	return out
}

type semaphoreReport struct {
	reportHead
	Size    int                   `json:"size"`
	InUse   int                   `json:"in_use"`
	Token   uint64                `json:"token"`
	Waiting int                   `json:"waiting"`
	Leases  []permitReport        `json:"leases"`
	PerNode []semaphoreNodeReport `json:"per_node"`
}

type semaphoreNodeReport struct {
	nodeHead
	Size    int            `json:"size"`
	InUse   int            `json:"in_use"`
	Token   uint64         `json:"token"`
	Waiting int            `json:"waiting"`
	Leases  []permitReport `json:"leases"`
}

func newSemaphoreReport(s core.SemaphoreState, err error, urls []string) *semaphoreReport {
	r := &semaphoreReport{reportHead: newHead(s.Name, "semaphore", err), Size: s.Size, InUse: s.InUse, Token: s.Token,
		Waiting: s.Waiting, Leases: newPermitReports(s.Leases)}
	for i, n := range s.PerNode {
		r.nodes = append(r.nodes, newNodeHead(urls[i], n.Err))
		r.PerNode = append(r.PerNode, semaphoreNodeReport{nodeHead: r.nodes[i], Size: n.Size, InUse: n.InUse,
			Token: n.Token, Waiting: n.Waiting, Leases: newPermitReports(n.Leases)})
	}
	switch {
	case err != nil:
	case s.InUse == 0:
		r.State = "free"
	case s.Size > 0 && s.InUse >= s.Size:
		r.State = "full"
	default:
		r.State = "in_use"
	}
	return r
}

// printReports prints the reports as a table, a row per name, and under
// it what does not fit a row: the waiters and leases each name lists, the
// nodes that did not answer, and the names whose state is unknown.
func printReports(w io.Writer, kind string, reports []report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	var notes []string
	note := func(name, format string, a ...any) {
		notes = append(notes, name+": "+fmt.Sprintf(format, a...))
	}
	switch kind {
	case "semaphore":
		fmt.Fprintln(tw, "NAME\tSTATE\tIN USE\tPERMITS\tTOKEN\tWAITING")
	case "rw":
		fmt.Fprintln(tw, "NAME\tSTATE\tWRITER\tTOKEN\tTTL\tNODES\tREADERS\tWAITING W/R")
	default:
		fmt.Fprintln(tw, "NAME\tSTATE\tHOLDER\tTOKEN\tTTL\tNODES\tWAITING")
	}
	for _, rep := range reports {
		switch r := rep.(type) {
		case *mutexReport:
			holder := dash(r.Holder)
			if r.Owned {
				holder += fmt.Sprintf(" (owner, %d holds)", r.Holds)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d/%d\t%d\n", r.Name, r.State, holder, r.Token, ttl(r.TTLMs), r.Nodes, len(r.PerNode), r.Waiting)
			if r.Metadata != "" {
				note(r.Name, "holder's metadata %q", r.Metadata)
			}
			for i, n := range r.PerNode {
				if len(n.Line) > 0 {
					var ws []string
					for _, wt := range n.Line {
						ws = append(ws, fmt.Sprintf("%s (place lapses in %s)", wt.ID, ttl(wt.LapsesMs)))
					}
					note(r.Name, "line on node %d: %s", i+1, strings.Join(ws, ", "))
					break
				}
			}
			for i, n := range r.PerNode {
				if r.State == "split" && n.Error == "" {
					note(r.Name, "node %d (%s): holder %s, TTL %s", i+1, n.Node, dash(n.Holder), ttl(n.TTLMs))
				}
			}
		case *rwReport:
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d/%d\t%d\t%d/%d\n", r.Name, r.State, dash(r.Writer), r.Token, ttl(r.TTLMs), r.Nodes, len(r.PerNode),
				len(r.ReadLeases), r.WaitingWriters, r.WaitingReaders)
			if r.Metadata != "" {
				note(r.Name, "writer's metadata %q", r.Metadata)
			}
			for _, rd := range r.ReadLeases {
				note(r.Name, "reader %s, TTL %s%s", rd.ID, ttl(rd.TTLMs), withMetadata(rd.Metadata))
			}
		case *semaphoreReport:
			size := "?"
			if r.Size > 0 {
				size = strconv.Itoa(r.Size)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%d\n", r.Name, r.State, r.InUse, size, r.Token, r.Waiting)
			for _, l := range r.Leases {
				permits := "permits " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(l.Permits)), ", "), "[]")
				if len(l.Permits) == 1 {
					permits = fmt.Sprintf("permit %d", l.Permits[0])
				}
				note(r.Name, "%s held by %s, TTL %s%s", permits, l.Holder, ttl(l.TTLMs), withMetadata(l.Metadata))
			}
		}
		h := rep.head()
		for i, n := range h.nodes {
			if n.Error != "" {
				note(h.Name, "node %d (%s) did not answer: %s", i+1, n.Node, n.Error)
			}
		}
		if h.cause != nil {
			// Its first line; the others are the nodes' errors, noted above.
			first, _, _ := strings.Cut(h.cause.Error(), "\n")
			note(h.Name, "state unknown: %s", first)
		}
	}
	tw.Flush()
	if len(notes) > 0 {
		fmt.Fprintln(w)
		for _, n := range notes {
			fmt.Fprintln(w, n)
		}
	}
}

// withMetadata is how a note ends for a lease with metadata m.
func withMetadata(m string) string {
	if m == "" {
		return ""
	}
	return fmt.Sprintf(", metadata %q", m)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ttl(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return (time.Duration(ms) * time.Millisecond).String()
}
