package main

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// TestReleaseForce frees a lock and a semaphore lease that the test
// holds; the leases then report ErrLost.
func TestReleaseForce(t *testing.T) {
	t.Parallel()
	ctx, nodes, c, name := onServers(t, 3, core.WithTTL(time.Minute))
	l, err := c.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	redlockExits(t, nodes, "", 0, "", "release", "--force", "--yes", name)
	if err := l.Extend(ctx, time.Minute); !errors.Is(err, core.ErrLost) {
		t.Errorf("Extend after redlock release --force: %v, want ErrLost", err)
	}

	s, err := c.Semaphore(name, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	redlockExits(t, nodes, name+"\n", 0, "", "release", "--force", "--kind", "semaphore", "--permit", s.ID(), name)
	if err := s.Extend(ctx, time.Minute); !errors.Is(err, core.ErrLost) {
		t.Errorf("the semaphore lease's Extend after redlock release --force: %v, want ErrLost", err)
	}
}

// TestReleaseRefused: without --force, or with a wrong confirmation,
// nothing is freed.
func TestReleaseRefused(t *testing.T) {
	t.Parallel()
	ctx, nodes, c, name := onServers(t, 3, core.WithTTL(time.Minute))
	l, err := c.Mutex(name).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	redlockExits(t, nodes, "", 2, "usage: redlock release --force", "release", "--yes", name)
	redlockExits(t, nodes, "other\n", 1, "not confirmed", "release", "--force", name)
	redlockExits(t, nodes, "", 1, "not confirmed", "release", "--force", name)
	if err := l.Extend(ctx, time.Minute); err != nil {
		t.Errorf("Extend after refused releases: %v, want the lock still held", err)
	}
}
