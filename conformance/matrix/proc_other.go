//go:build !linux

package matrix

import (
	"errors"
	"os/exec"
)

// dieWithParent is a no-op where the kernel offers no parent-death signal:
// the servers are stopped at exit, but not if the matrix is killed.
func dieWithParent(*exec.Cmd) {}

// ownGroup leaves cmd as it is: cancellation kills test2json alone.
func ownGroup(*exec.Cmd) {}

// pause is not offered here: it needs SIGSTOP and SIGCONT.
func pause(*exec.Cmd, bool) error { return errors.New("pausing a server needs Linux") }
