//go:build unix

package main

import (
	"os"
	"syscall"
)

func forwardedSignals() []os.Signal {
	return []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}
}

// stopSignals end redlock's own waiting (for a lock, or the demo).
var stopSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}

// terminalSignals are the signals a terminal sends to its foreground
// process group.
var terminalSignals = []os.Signal{syscall.SIGINT, syscall.SIGQUIT, syscall.SIGWINCH}
