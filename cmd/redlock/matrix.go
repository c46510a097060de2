package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// modulePath is the module whose conformance suite the matrix builds.
const modulePath = "github.com/redlockgo/redlock"

// matrixPkg is the command that runs the matrix, in the conformance
// module: building it here would compile the suite's dependencies
// (toxiproxy, prometheus, zerolog, porcupine) into every redlock command.
const matrixPkg = "./conformance/cmd/matrix"

// runMatrix builds the matrix command from the repository the working
// directory is in and runs it with args, forwarding signals to it, and
// returns its exit code.
func runMatrix(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root, err := moduleRoot(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	dir, err := os.MkdirTemp("", "redlock-matrix-")
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "matrix")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, matrixPkg)
	build.Dir, build.Stdout, build.Stderr = root, stderr, stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(stderr, "redlock matrix: go build %s: %v\n", matrixPkg, err)
		return 1
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = root, os.Stdin, stdout, stderr
	code, err := runForwarding(cmd)
	if err != nil {
		fmt.Fprintln(stderr, "redlock matrix:", err)
		return 1
	}
	return code
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
	return "", fmt.Errorf("run it inside a clone of the %s repository: it builds the conformance tests from source", modulePath)
}
