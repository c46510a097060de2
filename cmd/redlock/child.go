package main

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"syscall"
)

// toForward returns the signals that redlock passes on to the command it
// runs (see signals_unix.go): all of them but, when redlock's stdin is a
// terminal, those the terminal sends to the whole foreground process group
// (Ctrl-C's SIGINT, SIGQUIT, SIGWINCH), which the command, in redlock's
// group, gets from the terminal already, and would otherwise get twice.
func toForward() []os.Signal {
	if !isTerminal(os.Stdin) {
		return forwardedSignals()
	}
	var out []os.Signal
	for _, s := range forwardedSignals() {
		if !slices.Contains(terminalSignals, s) {
			out = append(out, s)
		}
	}
	return out
}

// startForwarding starts cmd and passes on to it the signals of
// toForward that redlock receives, until the returned stop is called.
// While it forwards, those signals do not act on redlock itself.
func startForwarding(cmd *exec.Cmd) (stop func(), err error) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, toForward()...)
	if err := cmd.Start(); err != nil {
		signal.Stop(sigs)
		return nil, err
	}
	done := make(chan struct{})
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case s := <-sigs:
				cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(sigs)
		close(done)
		<-exited
	}, nil
}

// runForwarding runs cmd to its end, forwarding signals to it, and
// returns its exit status (see exitStatus). The error is for a command
// that could not start.
func runForwarding(cmd *exec.Cmd) (int, error) {
	stop, err := startForwarding(cmd)
	if err != nil {
		return 0, err
	}
	err = cmd.Wait()
	stop()
	return exitStatus(cmd, err)
}

// exitStatus is the status a shell would report for cmd after Wait
// returned err: its exit code, or 128 plus the number of the signal that
// ended it.
func exitStatus(cmd *exec.Cmd, err error) (int, error) {
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return 0, err
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	return cmd.ProcessState.ExitCode(), nil
}

// isTerminal reports whether f is a terminal: a character device other
// than /dev/null (a test for the device's kind, without the ioctl that
// golang.org/x/term would compile in).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
