package matrix

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server if the matrix is killed
// before it can stop it (SIGKILL, a crash), so no server outlives a run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// ownGroup runs cmd in a process group of its own and has cancellation
// kill the whole group: test2json's child, the test binary, with it.
func ownGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
