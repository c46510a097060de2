// Command redlock runs redlock without installing anything but Go.
//
//	go run ./cmd/redlock [command]
//
// Commands:
//
//	demo   (the default) start an in-process miniredis and, for each driver
//	       (goredis, redigo, rueidis), show two clients contending for a
//	       Mutex: the second one's TryLock fails with ErrNotAcquired, the
//	       first unlocks, the second acquires with a higher fencing token.
//	       Prints one line per driver and exits 1 if any failed.
//	matrix run the conformance suite as a matrix, every primitive × wait
//	       strategy by driver × topology × server, and print it, with a
//	       progress bar while it runs; exit 1 if a cell failed. Servers:
//	       throwaway ones from redis-server / valkey-server on PATH, or
//	       existing ones (--nodes, --cluster), and embedded miniredis.
//	       Run inside the repository: it builds the suite with go test.
//	       See redlock matrix -h.
//	slowlog read the SLOWLOG of servers and say which redlock scripts
//	       blocked them longest. See redlock slowlog -h.
//	help   print the usage.
//
// An unknown command prints the usage on stderr and exits 2.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// command is one subcommand: redlock NAME [args].
type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"demo", "lock/contend/unlock/fence with every driver on an in-process miniredis (default)", runDemo},
		{"matrix", "run the conformance matrix (primitive × strategy by driver × topology × server) and print it", runMatrix},
		{"slowlog", "say which redlock scripts blocked the servers longest, from their SLOWLOG", runSlowlog},
		{"help", "print this help", func(_ context.Context, _ []string, stdout, _ io.Writer) int {
			usage(stdout)
			return 0
		}},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args to a command and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	name := "demo"
	if len(args) > 0 {
		name, args = args[0], args[1:]
	}
	switch name {
	case "-h", "-help", "--help":
		name = "help"
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
