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
