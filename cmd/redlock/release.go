package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/redlockgo/redlock/core"
)

const releaseUsage = `usage: redlock release --force [flags] NAME

Frees the lock NAME on every node, whoever holds it, and hands it on to
the next waiter as a release does: for a holder that is stuck. Give
--kind for a FairMutex, an RWMutex (its writer and every reader) or a
Semaphore (one lease's permits, by --permit).

This breaks mutual exclusion: the former holder may go on working on
what the lock protects until it next extends or releases the lease, which
then reports it lost (within a third of its TTL with a watchdog, as under
redlock run). Only fencing tokens, checked by the resource, keep out its
late writes.

Asks for NAME on stdin to confirm, unless --yes.

Exit status: 0 when a majority of nodes freed NAME (or it was free); 1
when it was not confirmed or the nodes failed; 2 for a usage error (bad
flags, no NAME, no nodes).

Examples:
  export REDLOCK_NODES=redis://localhost:6379
  redlock release --force nightly-report
  redlock release --force --yes --kind semaphore --permit GQ6F... encoder

Flags:
`

func runRelease(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("release", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		conn         connFlags
		force, yes   bool
		kind, permit string
		timeout      time.Duration
		usageError   = func(format string, a ...any) int {
			fmt.Fprintf(stderr, "redlock release: "+format+"\n\n", a...)
			fs.Usage()
			return 2
		}
	)
	conn.register(fs)
	fs.BoolVar(&force, "force", false, "free NAME whoever holds it (required: the only release there is)")
	fs.BoolVar(&yes, "yes", false, "do not ask for NAME to confirm")
	fs.StringVar(&kind, "kind", "mutex", "what NAME is: mutex, fair (a FairMutex), rw (an RWMutex) or semaphore")
	fs.StringVar(&permit, "permit", "", "for --kind semaphore, the lease to free: its permit `ID` (Lease.ID) or the holder token that State lists")
	fs.DurationVar(&timeout, "timeout", 10*time.Second, "how long to wait for the nodes")
	fs.Usage = func() {
		fmt.Fprint(stderr, releaseUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case !force:
		return usageError("refusing without --force: a forced release breaks mutual exclusion")
	case fs.NArg() != 1:
		return usageError("want one NAME after the flags (got %q)", fs.Args())
	case (kind == "semaphore") != (permit != ""):
		return usageError("--kind semaphore needs --permit ID, and --permit goes with --kind semaphore alone")
	}
	name := fs.Arg(0)
	var forceRelease func(ctx context.Context, c *core.Client) error
	switch kind {
	case "mutex":
		forceRelease = func(ctx context.Context, c *core.Client) error { return c.Mutex(name).ForceUnlock(ctx) }
	case "fair":
		forceRelease = func(ctx context.Context, c *core.Client) error { return c.FairMutex(name).ForceUnlock(ctx) }
	case "rw":
		forceRelease = func(ctx context.Context, c *core.Client) error { return c.RWMutex(name).ForceUnlock(ctx) }
	case "semaphore":
		forceRelease = func(ctx context.Context, c *core.Client) error { return c.Semaphore(name, 1).ForceRelease(ctx, permit) }
	default:
		return usageError("--kind %q: want mutex, fair, rw or semaphore", kind)
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "redlock release: "+format+"\n", a...)
		return 1
	}
	urls, open, err := conn.resolve()
	if err != nil {
		return usageError("%v", err)
	}
	if !yes {
		fmt.Fprintf(stderr, "This frees the %s %q whoever holds it, breaking mutual exclusion.\nType the name to confirm: ", kind, name)
		line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
		if strings.TrimSpace(line) != name {
			return fail("not confirmed; nothing was freed")
		}
	}
	// Nothing waits: Poll leaves the servers' configuration alone (--strategy
	// does not apply).
	client, closeClient, err := connect(open, urls, core.WithKeyPrefix(conn.prefix), core.WithWaitStrategy(core.Poll))
	if err != nil {
		return fail("%v", err)
	}
	defer closeClient()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := forceRelease(ctx, client); err != nil {
		return fail("%s %q: %v", kind, name, err)
	}
	fmt.Fprintf(stdout, "%s %q is free or handed on to its next waiter\n", kind, name)
	return 0
}
