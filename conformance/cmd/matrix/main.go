// Command matrix runs the conformance suite as a matrix, every primitive ×
// wait strategy by driver × topology × server, and prints it, with a
// progress bar while it runs; it exits 1 if a cell failed. Servers:
// throwaway ones from redis-server / valkey-server on PATH, or existing
// ones (--nodes, --cluster), and embedded miniredis. It builds the suite
// with go test, so it runs inside the repository:
//
//	go run ./cmd/redlock matrix [flags]      (builds and runs this command)
//	go run ./conformance/cmd/matrix [flags]  (the same)
//
// It lives in the conformance module, with the suite, so that the redlock
// command does not compile the suite's dependencies (toxiproxy,
// prometheus, zerolog, porcupine). See docs/matrix.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// SIGTERM too: redlock matrix forwards its signals here, and the
	// throwaway servers must be stopped either way.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMatrix(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
