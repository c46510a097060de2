package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// binary is the redlock command built for the tests that run it.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "redlock-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "redlock")
	// With the client libraries this test binary was built with.
	var tags []string
	for _, d := range drivers {
		if d.name != "redigo" {
			tags = append(tags, "redlock_"+d.name)
		}
	}
	build := exec.Command("go", "build", "-tags", strings.Join(tags, ","), "-o", binary, ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the redlock command: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testNodes returns the real servers' addresses (REDLOCK_TEST_NODES,
// which scripts/test.sh sets), skipping the test when it is unset, or
// failing it under CI.
func testNodes(t *testing.T) []string {
	t.Helper()
	if nodes := split(os.Getenv("REDLOCK_TEST_NODES")); len(nodes) > 0 {
		return nodes
	}
	if os.Getenv("CI") != "" {
		t.Fatal("REDLOCK_TEST_NODES not set under CI; run scripts/test.sh, which starts the servers")
	}
	t.Skip("REDLOCK_TEST_NODES not set; run scripts/test.sh to start real servers")
	return nil
}

// proc is a redlock command running in a test.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	exited         chan struct{}
	dir            string // its working directory, where the scripts leave marks
}

// startRedlock runs redlock with args, nodes in REDLOCK_NODES, in a
// directory of its own; it is killed at the test's end if still running.
func startRedlock(t *testing.T, dir string, nodes []string, args ...string) *proc {
	t.Helper()
	return startRedlockEnv(t, dir, []string{nodesEnv + "=" + strings.Join(nodes, ",")}, "", args...)
}

// startRedlockEnv runs redlock with args, env added to the test's, and
// stdin as its input.
func startRedlockEnv(t *testing.T, dir string, env []string, stdin string, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), exited: make(chan struct{}), dir: dir}
	p.cmd.Dir = dir
	p.cmd.Env = append(os.Environ(), env...)
	if stdin != "" {
		p.cmd.Stdin = strings.NewReader(stdin)
	}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// redlockExits runs redlock with args on nodes, stdin as its input, and
// checks that it exits with code within 10s, with want on stderr.
func redlockExits(t *testing.T, nodes []string, stdin string, code int, want string, args ...string) *proc {
	t.Helper()
	p := startRedlockEnv(t, t.TempDir(), []string{nodesEnv + "=" + strings.Join(nodes, ",")}, stdin, args...)
	p.expect(t, 10*time.Second, code, want)
	return p
}

// status waits up to d for redlock to exit and returns its exit code.
func (p *proc) status(t *testing.T, d time.Duration) int {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(d):
		p.cmd.Process.Kill()
		<-p.exited
		t.Fatalf("redlock %q did not exit within %s\nstdout:\n%s\nstderr:\n%s", p.cmd.Args[1:], d, &p.stdout, &p.stderr)
	}
	if ws := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ws.Signaled() {
		t.Fatalf("redlock %q was killed by %v\nstderr:\n%s", p.cmd.Args[1:], ws.Signal(), &p.stderr)
	}
	return p.cmd.ProcessState.ExitCode()
}

// expect checks that redlock exits with code within d and that its
// stderr holds want.
func (p *proc) expect(t *testing.T, d time.Duration, code int, want string) {
	t.Helper()
	if got := p.status(t, d); got != code || !strings.Contains(p.stderr.String(), want) {
		t.Errorf("redlock %q: exit %d, want %d, with %q on stderr\nstdout:\n%s\nstderr:\n%s", p.cmd.Args[1:], got, code, want, &p.stdout, &p.stderr)
	}
}

// waitFor waits until the script has made the file name in p's directory.
func (p *proc) waitFor(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(p.dir, name)); err == nil {
			return
		}
		select {
		case <-p.exited:
			t.Fatalf("redlock %q exited before %s appeared: %v\nstderr:\n%s", p.cmd.Args[1:], name, p.cmd.ProcessState, &p.stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear within 10s\nstderr:\n%s", name, &p.stderr)
		}
	}
}

// lockName is a name no other run of the tests uses.
func lockName(t *testing.T) string {
	return strings.ReplaceAll(t.Name(), "/", "-") + "-" + randomHex(4)
}

// deleteOn deletes key on every node, as an operator or an eviction would.
func deleteOn(t *testing.T, nodes []string, key string) {
	t.Helper()
	for _, n := range nodes {
		conn, err := redis.Dial("tcp", n)
		if err != nil {
			t.Fatal(err)
		}
		deleted, err := redis.Int(conn.Do("DEL", key))
		conn.Close()
		if err != nil || deleted != 1 {
			t.Fatalf("DEL %s on %s: %d deleted, %v; want 1", key, n, deleted, err)
		}
	}
}

// holdScript touches held once it runs, then sleeps until a signal ends
// it; SIGTERM makes it exit 42.
const holdScript = `trap 'exit 42' TERM; touch held; while :; do sleep 0.05; done`

func TestRunPassesStatusAndToken(t *testing.T) {
	t.Parallel()
	nodes, dir, name := testNodes(t)[:1], t.TempDir(), lockName(t)
	var last uint64
	for range 2 {
		p := startRedlock(t, dir, nodes, "run", name, "--", "sh", "-c", `echo "$REDLOCK_TOKEN" > token; exit 7`)
		p.expect(t, 10*time.Second, 7, "")
		b, _ := os.ReadFile(filepath.Join(dir, "token"))
		token, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || token <= last {
			t.Fatalf("REDLOCK_TOKEN = %q (%v), want a number above the last run's %d", b, err, last)
		}
		last = token
	}
}

func TestRunTryRefusedWhileHeld(t *testing.T) {
	t.Parallel()
	nodes, name := testNodes(t)[:1], lockName(t)
	holder := startRedlock(t, t.TempDir(), nodes, "run", name, "--", "sh", "-c", holdScript)
	holder.waitFor(t, "held")

	try := redlockExits(t, nodes, "", exitNotAcquired, "not acquired (--try)", "run", "--try", name, "--", "touch", "ran")
	start := time.Now()
	wait := redlockExits(t, nodes, "", exitNotAcquired, "not acquired within --wait 300ms", "run", "--wait", "300ms", name, "--", "touch", "ran")
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("--wait 300ms gave up after %s", took)
	}
	for _, p := range []*proc{try, wait} {
		if _, err := os.Stat(filepath.Join(p.dir, "ran")); err == nil {
			t.Errorf("redlock %q ran the command without the lock", p.cmd.Args[1:])
		}
	}

	// A waiter stopped by a signal exits as the signal would have ended it.
	waiter := startRedlock(t, t.TempDir(), nodes, "run", name, "--", "touch", "ran")
	time.Sleep(200 * time.Millisecond)
	waiter.cmd.Process.Signal(syscall.SIGTERM)
	waiter.expect(t, 5*time.Second, 128+int(syscall.SIGTERM), "stopped waiting")

	holder.cmd.Process.Signal(syscall.SIGTERM)
	holder.expect(t, 5*time.Second, 42, "")
	redlockExits(t, nodes, "", 0, "", "run", "--try", name, "--", "true")
}

// TestRunForwardsSignals sends redlock run signals while its command
// runs: the command gets each (and records it), and SIGTERM ends it.
func TestRunForwardsSignals(t *testing.T) {
	t.Parallel()
	nodes, dir := testNodes(t)[:1], t.TempDir()
	p := startRedlock(t, dir, nodes, "run", lockName(t), "--", "sh", "-c",
		`trap 'echo USR1 >> got' USR1; trap 'echo HUP >> got' HUP; `+holdScript)
	p.waitFor(t, "held")
	for _, s := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGHUP} {
		p.cmd.Process.Signal(s)
		time.Sleep(100 * time.Millisecond) // sh runs a trap between commands
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.expect(t, 5*time.Second, 42, "")
	// sh runs the traps of signals pending together in its own order.
	b, _ := os.ReadFile(filepath.Join(dir, "got"))
	if got := strings.Fields(string(b)); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"HUP", "USR1"}) {
		t.Errorf("the command got %q, want USR1 and HUP once each", b)
	}
}

// TestRunLostLease deletes the lock's key on the servers while the
// command runs: redlock stops the command and exits 124.
func TestRunLostLease(t *testing.T) {
	t.Parallel()
	all := testNodes(t)
	for _, tc := range []struct {
		name   string
		nodes  []string
		flags  []string
		suffix string
		script string
	}{
		// The command exits on SIGTERM.
		{"Mutex", all[:1], nil, "", holdScript},
		// Three nodes, waiting by poll; the command ignores SIGTERM, so
		// SIGKILL ends it after --grace.
		{"Mutex/quorum/grace", all[:3], []string{"--strategy", "poll", "--grace", "300ms"}, "", `trap '' TERM; touch held; while :; do sleep 0.05; done`},
		{"FairMutex", all[:1], []string{"--fair"}, ":fair", holdScript},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			name := lockName(t)
			args := append(append([]string{"run", "--ttl", "1500ms"}, tc.flags...), name, "--", "sh", "-c", tc.script)
			p := startRedlock(t, t.TempDir(), tc.nodes, args...)
			p.waitFor(t, "held")
			start := time.Now()
			deleteOn(t, tc.nodes, "redlock:{"+name+"}"+tc.suffix)
			p.expect(t, 5*time.Second, exitLost, "lost the lock "+name)
			if took := time.Since(start); slices.Contains(tc.flags, "--grace") && took < 300*time.Millisecond {
				t.Errorf("exited %s after the deletion, before the grace period", took)
			}
		})
	}
}

func TestRunSemaphore(t *testing.T) {
	t.Parallel()
	nodes, name := testNodes(t)[:1], lockName(t)
	var holders []*proc
	for range 2 {
		p := startRedlock(t, t.TempDir(), nodes, "run", "--semaphore", "2", name, "--", "sh", "-c", holdScript)
		p.waitFor(t, "held")
		holders = append(holders, p)
	}
	redlockExits(t, nodes, "", exitNotAcquired, "no permit of the semaphore "+name+" is free", "run", "--semaphore", "2", "--try", name, "--", "true")
	holders[0].cmd.Process.Signal(syscall.SIGTERM)
	holders[0].expect(t, 5*time.Second, 42, "")
	redlockExits(t, nodes, "", 0, "", "run", "--semaphore", "2", "--try", name, "--", "true")
	holders[1].cmd.Process.Signal(syscall.SIGTERM)
	holders[1].expect(t, 5*time.Second, 42, "")
}

// TestRunUsage needs no server: redlock run refuses before connecting.
func TestRunUsage(t *testing.T) {
	t.Parallel()
	nowhere := []string{"127.0.0.1:1"}
	for _, tc := range []struct {
		nodes []string
		args  []string
		code  int
		want  string
	}{
		{nil, []string{"run", "x", "--", "true"}, exitFailed, "no nodes: give --nodes"},
		{nowhere, []string{"run", "x"}, exitFailed, "want NAME -- CMD"},
		{nowhere, []string{"run", "--try", "--wait", "1s", "x", "--", "true"}, exitFailed, "give one"},
		{nowhere, []string{"run", "--driver", "nope", "x", "--", "true"}, exitFailed, "want one of"},
		{[]string{"http://x:1"}, []string{"run", "x", "--", "true"}, exitFailed, "want redis://host:port"},
		{nowhere, []string{"run", "x", "--", "no-such-command-here"}, exitNotFound, "no-such-command-here"},
	} {
		redlockExits(t, tc.nodes, "", tc.code, tc.want, tc.args...)
	}
}

// TestRunKilledStopsCommand kills redlock run with SIGKILL, which it
// cannot pass on: on Linux the kernel sends the command SIGTERM.
func TestRunKilledStopsCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	t.Parallel()
	nodes, dir := testNodes(t)[:1], t.TempDir()
	p := startRedlock(t, dir, nodes, "run", lockName(t), "--", "sh", "-c",
		`trap 'touch terminated; exit 0' TERM; touch held; while :; do sleep 0.05; done`)
	p.waitFor(t, "held")
	p.cmd.Process.Kill()
	<-p.exited
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "terminated")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the command got no SIGTERM within 5s of redlock run's death")
		}
	}
}
