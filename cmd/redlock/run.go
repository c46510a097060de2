package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/redlockgo/redlock/core"
)

// The exit statuses of redlock run that are its own; otherwise it exits
// with the command's status, or 128 plus the number of the signal that
// ended the command (or that stopped redlock while it waited).
const (
	exitNotAcquired = 75  // --try refused, or --wait passed (EX_TEMPFAIL)
	exitLost        = 124 // the lease was lost while the command ran, which was stopped
	exitFailed      = 125 // redlock run itself failed: usage, servers
	exitCannotRun   = 126 // the command was found but could not start
	exitNotFound    = 127 // the command was not found
)

// tokenEnv names the variable that gives the command its fencing token.
const tokenEnv = "REDLOCK_TOKEN"

const runUsage = `usage: redlock run [flags] NAME -- CMD [ARGS...]

Waits for the lock NAME, runs CMD with the lease kept extended (the
watchdog, every third of --ttl), and releases the lock when CMD ends:
the distributed counterpart of flock(1). CMD gets the lease's fencing
token in $REDLOCK_TOKEN; pass it to whatever the lock protects, so that a
holder that lost the lock is refused there. Signals sent to redlock run
(SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2) are passed on to CMD;
when redlock's stdin is a terminal, Ctrl-C reaches CMD from the terminal.

If the lease is lost while CMD runs (its keys expired or were deleted on
the servers, or a majority stopped answering), CMD gets SIGTERM, then
SIGKILL after --grace, and redlock run exits 124. If redlock run itself
dies (SIGKILL), on Linux CMD gets SIGTERM.

Exit status: CMD's own; 128+n if signal n ended it; 75 if the lock was
not acquired (--try, or --wait passed); 124 if the lease was lost and CMD
stopped; 125 if redlock run failed (usage, servers); 126 if CMD could not
be run; 127 if CMD was not found.

Examples:
  export REDLOCK_NODES=redis://localhost:6379
  redlock run --wait 30s nightly-report -- ./report.sh
  redlock run --try --ttl 30s migrate -- ./migrate.sh
  redlock run --semaphore 3 encoder -- ffmpeg -i in.mp4 out.webm

Flags:
`

type runFlags struct {
	conn      connFlags
	try       bool
	wait      time.Duration
	fair      bool
	semaphore int
	grace     time.Duration
	ttl       time.Duration
	verbose   bool
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.conn.register(fs)
	fs.BoolVar(&f.try, "try", false, "try once: if the lock is held, exit 75 at once")
	fs.DurationVar(&f.wait, "wait", 0, "wait at most this long for the lock, then exit 75 (default: wait until it is free)")
	fs.BoolVar(&f.fair, "fair", false, "wait in line: a FairMutex, granted in the order the waiters came (a different lock from the Mutex of the same NAME)")
	fs.IntVar(&f.semaphore, "semaphore", 0, "run under one of `N` permits of the Semaphore NAME instead of a lock (N is used until someone stores another)")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "after the lease is lost, how long CMD has between SIGTERM and SIGKILL")
	fs.DurationVar(&f.ttl, "ttl", 10*time.Second, "the lease's TTL: the watchdog extends it every third of it, and a holder that dies frees the lock after at most this long")
	fs.BoolVar(&f.verbose, "v", false, "say on stderr when the lock is acquired and released")
	fs.Usage = func() {
		fmt.Fprint(stderr, runUsage)
		fs.PrintDefaults()
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "redlock run: "+format+"\n", a...)
		return exitFailed
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitFailed
	}
	rest := fs.Args()
	if len(rest) >= 2 && rest[1] == "--" {
		rest = append(rest[:1:1], rest[2:]...)
	}
	if len(rest) < 2 {
		fs.Usage()
		return fail("want NAME -- CMD [ARGS...] after the flags (got %q)", fs.Args())
	}
	name, argv := rest[0], rest[1:]
	switch {
	case f.try && f.wait > 0:
		return fail("--try and --wait: give one (--try tries once, --wait waits at most that long)")
	case f.fair && f.semaphore > 0:
		return fail("--fair and --semaphore: give one (a Semaphore's waiters are served in the order they came under the notify strategy already)")
	case f.semaphore < 0:
		return fail("--semaphore %d: want a number of permits ≥ 1", f.semaphore)
	case f.wait < 0 || f.grace < 0:
		return fail("--wait and --grace must not be negative")
	}
	urls, open, err := f.conn.resolve()
	if err != nil {
		return fail("%v", err)
	}
	strategy, err := f.conn.waitStrategy()
	if err != nil {
		return fail("%v", err)
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		fmt.Fprintf(stderr, "redlock run: %v\n", err)
		return exitNotFound
	}
	client, closeClient, err := connect(open, urls,
		core.WithKeyPrefix(f.conn.prefix), core.WithWaitStrategy(strategy), core.WithTTL(f.ttl), core.WithAutoExtend())
	if err != nil {
		return fail("%v", err)
	}
	defer closeClient()

	lease, code := f.acquire(ctx, client, name, stderr)
	if lease == nil {
		return code
	}
	if f.verbose {
		fmt.Fprintf(stderr, "redlock run: acquired %s (fencing token %d)\n", name, lease.Token())
	}
	code = f.runHolding(lease, name, path, argv, stderr)
	// Released with a context of its own: ctx may have been cancelled by a
	// signal that was meant for the command.
	unlockCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := lease.Unlock(unlockCtx); err != nil && code != exitLost {
		fmt.Fprintf(stderr, "redlock run: releasing %s: %v (it frees itself within --ttl)\n", name, err)
	} else if f.verbose && err == nil {
		fmt.Fprintf(stderr, "redlock run: released %s\n", name)
	}
	return code
}

// acquire takes the lock (or permit) name as the flags say. It returns a
// nil lease and the exit status when it did not.
func (f *runFlags) acquire(ctx context.Context, client *core.Client, name string, stderr io.Writer) (*core.Lease, int) {
	waitCtx := ctx
	if f.wait > 0 {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithTimeout(ctx, f.wait)
		defer cancel()
	}
	var try, wait func(context.Context) (*core.Lease, error)
	what, busy := "the lock "+name, "the lock "+name+" is held"
	switch {
	case f.semaphore > 0:
		s := client.Semaphore(name, f.semaphore)
		try = func(ctx context.Context) (*core.Lease, error) { return s.TryAcquire(ctx, 1) }
		wait = func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, 1) }
		what, busy = "a permit of the semaphore "+name, "no permit of the semaphore "+name+" is free"
	case f.fair:
		m := client.FairMutex(name)
		try, wait = m.TryLock, m.Lock
		what, busy = "the fair lock "+name, "the fair lock "+name+" is held"
	default:
		m := client.Mutex(name)
		try, wait = m.TryLock, m.Lock
	}
	var (
		lease *core.Lease
		err   error
	)
	if f.try {
		lease, err = try(waitCtx)
	} else {
		lease, err = wait(waitCtx)
	}
	switch {
	case err == nil:
		return lease, 0
	case errors.Is(err, core.ErrNotAcquired):
		fmt.Fprintf(stderr, "redlock run: %s: not acquired (--try)\n", busy)
		return nil, exitNotAcquired
	case ctx.Err() != nil:
		code, ok := signalStatus(ctx)
		if !ok {
			code = exitFailed
		}
		fmt.Fprintf(stderr, "redlock run: stopped waiting for %s: %v\n", what, context.Cause(ctx))
		return nil, code
	case errors.Is(err, context.DeadlineExceeded) && f.wait > 0:
		fmt.Fprintf(stderr, "redlock run: %s: not acquired within --wait %s\n", busy, f.wait)
		return nil, exitNotAcquired
	}
	fmt.Fprintf(stderr, "redlock run: acquiring %s: %v\n", what, err)
	return nil, exitFailed
}

// runHolding runs the command while lease holds and returns the exit
// status: the command's, or exitLost when the lease ended first.
func (f *runFlags) runHolding(lease *core.Lease, name, path string, argv []string, stderr io.Writer) int {
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args = argv
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", tokenEnv, lease.Token()))
	dieWithRedlock(cmd)
	stop, err := startForwarding(cmd)
	if err != nil {
		fmt.Fprintf(stderr, "redlock run: %v\n", err)
		return exitCannotRun
	}
	defer stop()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		select {
		case <-lease.Done():
			// It ended as the lease did: it may have run on without the lock.
			fmt.Fprintf(stderr, "redlock run: lost the lock %s as %s ended: %v\n", name, argv[0], lease.Err())
			return exitLost
		default:
		}
		code, err := exitStatus(cmd, err)
		if err != nil {
			fmt.Fprintf(stderr, "redlock run: %v\n", err)
			return exitFailed
		}
		return code
	case <-lease.Done():
	}
	fmt.Fprintf(stderr, "redlock run: lost the lock %s while %s ran: %v; stopping it (SIGTERM, SIGKILL after %s)\n", name, argv[0], lease.Err(), f.grace)
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(f.grace):
		cmd.Process.Kill()
		<-exited
	}
	return exitLost
}
