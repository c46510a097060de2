package main

import (
	"context"
	"crypto/rand"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// release runs redlock release with args against nodes, stdin as its
// input, and returns its exit code and output.
func release(t *testing.T, nodes []string, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"release", "--nodes", strings.Join(nodes, ",")}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), string(out)
}

// TestReleaseForce frees a lock and a semaphore lease that the test
// holds; the leases then report ErrLost.
func TestReleaseForce(t *testing.T) {
	nodes := testNodes(t)
	ctx := context.Background()
	c := testClient(t, nodes, core.WithTTL(time.Minute))
	name := "release-" + rand.Text()

	l, err := c.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := release(t, nodes, "", "--force", "--yes", name); code != 0 {
		t.Fatalf("redlock release --force --yes: exit %d, want 0\n%s", code, out)
	}
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, core.ErrLost) {
		t.Errorf("Extend after redlock release --force: %v, want ErrLost", err)
	}

	s, err := c.Semaphore(name, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if code, out := release(t, nodes, name+"\n", "--force", "--kind", "semaphore", "--permit", s.ID(), name); code != 0 {
		t.Fatalf("redlock release --force --kind semaphore, confirmed: exit %d, want 0\n%s", code, out)
	}
	if err := s.Extend(ctx, time.Minute); !errors.Is(err, core.ErrLost) {
		t.Errorf("the semaphore lease's Extend after redlock release --force: %v, want ErrLost", err)
	}
}

// TestReleaseRefused: without --force, or with a wrong confirmation,
// nothing is freed.
func TestReleaseRefused(t *testing.T) {
	nodes := testNodes(t)
	ctx := context.Background()
	c := testClient(t, nodes, core.WithTTL(time.Minute))
	name := "release-" + rand.Text()
	l, err := c.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	if code, out := release(t, nodes, "", "--yes", name); code != 2 || !strings.Contains(out, "usage: redlock release --force") {
		t.Errorf("redlock release without --force: exit %d, want 2 with the usage\n%s", code, out)
	}
	if code, out := release(t, nodes, "other\n", "--force", name); code != 1 || !strings.Contains(out, "not confirmed") {
		t.Errorf("redlock release --force, confirmed with another name: exit %d, want 1, not confirmed\n%s", code, out)
	}
	if code, out := release(t, nodes, "", "--force", name); code != 1 || !strings.Contains(out, "not confirmed") {
		t.Errorf("redlock release --force, no confirmation on stdin: exit %d, want 1, not confirmed\n%s", code, out)
	}
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Errorf("Extend after refused releases: %v, want the lock still held", err)
	}
}
