// Command redlock shows what the library does and runs commands under its
// locks.
//
//	go run ./cmd/redlock [command] [flags]
//	go build -o ~/bin/redlock ./cmd/redlock
//
// Commands:
//
//	demo    (the default) each primitive at work on an embedded miniredis,
//	        or on the servers of --nodes / $REDLOCK_NODES: a hand-off with
//	        its latency, fencing tokens rising, a lost lease closing Done.
//	run     redlock run [flags] NAME -- CMD [ARGS...]: run CMD while
//	        holding the lock NAME (or a fair lock, or a semaphore permit),
//	        with its fencing token in $REDLOCK_TOKEN; see redlock run -h.
//	inspect redlock inspect [flags] NAME...: print who holds each lock
//	        NAME, with its fencing token and TTL, on how many nodes, and
//	        who waits, read-only; --json for scripts. See redlock inspect -h.
//	release redlock release --force [flags] NAME: free the lock NAME
//	        whoever holds it, for a holder that is stuck, after a
//	        confirmation; see redlock release -h.
//	slowlog say which redlock scripts blocked the servers longest, from
//	        their SLOWLOG. See redlock slowlog -h.
//	matrix  build and run the conformance matrix (conformance/cmd/matrix),
//	        inside a clone of the repository. See docs/matrix.md.
//	help    print the usage.
//
// The command always has the redigo client library; go-redis and rueidis,
// which each take longer to compile than the rest of the command, come in
// with the build tags redlock_goredis and redlock_rueidis. An unknown
// command prints the usage on stderr and exits 2. See docs/command.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// command is one subcommand: redlock NAME [args].
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"demo", "show each primitive at work, on an embedded miniredis or your servers (default)", runDemo},
		{"inspect", "print who holds a lock and who waits: redlock inspect [flags] NAME...", runInspect},
		{"matrix", "run the conformance matrix (inside the repository; builds conformance/cmd/matrix)", runMatrix},
		{"run", "run a command while holding a lock: redlock run [flags] NAME -- CMD [ARGS...]", runRun},
		{"release", "free a lock whoever holds it: redlock release --force [flags] NAME", runRelease},
		{"slowlog", "say which redlock scripts blocked the servers longest, from their SLOWLOG", runSlowlog},
		{"help", "print this help", func(_ context.Context, _ []string, stdout, _ io.Writer) int {
			usage(stdout)
			return 0
		}},
	}
}

func main() {
	ctx, stop := signalContext(context.Background())
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// signalError is the cause of a context cancelled by a signal.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return "received " + e.sig.String() }

// signalContext returns a context cancelled, with a signalError as its
// cause, by the first SIGINT, SIGTERM or SIGHUP (see stopSignals). Later
// ones are ignored, until stop.
func signalContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-sigs:
			cancel(signalError{s})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// signalStatus is the exit status for a context that a signal cancelled,
// as a shell reports a process the signal ended: 128 plus its number.
func signalStatus(ctx context.Context) (int, bool) {
	var se signalError
	if errors.As(context.Cause(ctx), &se) {
		if n, ok := se.sig.(syscall.Signal); ok {
			return 128 + int(n), true
		}
		return 130, true
	}
	return 0, false
}

// run dispatches args to a command and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "demo"
	switch {
	case len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		name, args = "help", args[1:]
	case len(args) > 0 && !strings.HasPrefix(args[0], "-"):
		name, args = args[0], args[1:]
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, args, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "redlock: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: redlock [command]")
	fmt.Fprintln(w, "\ncommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-7s %s\n", c.name, c.summary)
	}
}
