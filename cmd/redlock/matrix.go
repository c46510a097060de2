package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// matrixPkg is the command that runs the matrix, in the conformance
// module: building it here would compile the suite's dependencies
// (toxiproxy, prometheus, zerolog, porcupine) into every redlock command.
// The go command finds it in the workspace of the working directory, and
// the matrix command finds the repository's root there.
const matrixPkg = "github.com/redlockgo/redlock/conformance/cmd/matrix"

// runMatrix builds the matrix command from the repository the working
// directory is in and runs it with args, forwarding signals to it, and
// returns its exit code.
func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	dir, err := os.MkdirTemp("", "redlock-matrix-")
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "matrix")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, matrixPkg)
	build.Stdout, build.Stderr = stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "redlock matrix: go build %s: %v (run it inside a clone of the repository: it builds the conformance tests from source)\n", matrixPkg, err)
		return 1
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	code, err := runForwarding(cmd)
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	return code
}
