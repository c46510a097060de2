package main

import (
	"os/exec"
	"syscall"
)

// dieWithRedlock has the kernel send cmd SIGTERM if redlock dies before
// it (SIGKILL, a crash): the lease would lapse within its TTL, and the
// command must not run on without it. (The signal follows the thread that
// started cmd; the Go runtime ends no thread of this program early.)
func dieWithRedlock(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
