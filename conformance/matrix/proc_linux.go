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

// pause stops (SIGSTOP) or resumes (SIGCONT) a process: a server paused
// keeps its connections open and answers nothing, as one stalled would.
func pause(cmd *exec.Cmd, stop bool) error {
	if stop {
		return cmd.Process.Signal(syscall.SIGSTOP)
	}
	return cmd.Process.Signal(syscall.SIGCONT)
}
