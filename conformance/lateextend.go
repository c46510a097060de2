package conformance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// extendedLease is a lease kind whose Extend a case delays: the driver
// call that extends it, the key it passes, how to take one, and how
// another client tries to take what it excludes.
type extendedLease struct {
	op, key func(name string) string
	take    func(ctx context.Context, c *core.Client, name string, ttl time.Duration) (*core.Lease, error)
	rival   func(ctx context.Context, c *core.Client, name string) (*core.Lease, error)
}

func fixed(s string) func(string) string { return func(string) string { return s } }

// extendedLeases are the lease kinds of each primitive that extends.
var extendedLeases = map[string]map[string]extendedLease{
	"Mutex": {
		"plain": {op: fixed("Extend"), key: lockKey,
			take: func(ctx context.Context, c *core.Client, n string, ttl time.Duration) (*core.Lease, error) {
				return c.Mutex(n, core.WithTTL(ttl)).TryLock(ctx)
			},
			rival: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.Mutex(n, owner()).TryLock(ctx)
			}},
		"owned": {op: fixed("ExtendOwned"), key: lockKey,
			take: func(ctx context.Context, c *core.Client, n string, ttl time.Duration) (*core.Lease, error) {
				return c.Mutex(n, core.WithOwner("extender"), core.WithTTL(ttl)).TryLock(ctx)
			},
			rival: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.Mutex(n, owner()).TryLock(ctx)
			}},
	},
	"RWMutex": {
		"read": {op: fixed("RWMutexReadExtend"), key: func(n string) string { return rwKey(n, ":r") },
			take: func(ctx context.Context, c *core.Client, n string, ttl time.Duration) (*core.Lease, error) {
				return c.RWMutex(n, core.WithTTL(ttl)).TryRLock(ctx)
			},
			rival: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.RWMutex(n).TryLock(ctx)
			}},
		"write": {op: fixed("Extend"), key: func(n string) string { return rwKey(n, ":w") },
			take: func(ctx context.Context, c *core.Client, n string, ttl time.Duration) (*core.Lease, error) {
				return c.RWMutex(n, core.WithTTL(ttl)).TryLock(ctx)
			},
			rival: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.RWMutex(n).TryRLock(ctx)
			}},
	},
	"FairMutex": {
		"lock": {op: fixed("Extend"), key: func(n string) string { return fairKey(n, "") },
			take: func(ctx context.Context, c *core.Client, n string, ttl time.Duration) (*core.Lease, error) {
				return c.FairMutex(n, core.WithTTL(ttl)).TryLock(ctx)
			},
			rival: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.FairMutex(n).TryLock(ctx)
			}},
	},
	// A MultiLock extends each name apart: the first name's Extend is the
	// one delayed, and a Mutex of that name is the rival.
	"MultiLock": {
		"names": {op: fixed("Extend"), key: func(n string) string { return lockKey(n + "/0") },
			take: func(ctx context.Context, c *core.Client, n string, ttl time.Duration) (*core.Lease, error) {
				return c.MultiLock([]string{n + "/0", n + "/1"}, core.WithTTL(ttl)).TryLock(ctx)
			},
			rival: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.Mutex(n + "/0").TryLock(ctx)
			}},
	},
	"Semaphore": {
		"permit": {op: fixed("SemaphoreExtend"), key: func(n string) string { return semKey(n, "") },
			take: func(ctx context.Context, c *core.Client, n string, ttl time.Duration) (*core.Lease, error) {
				return c.Semaphore(n, 1, core.WithTTL(ttl)).TryAcquire(ctx, 1)
			},
			rival: func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.Semaphore(n, 1).TryAcquire(ctx, 1)
			}},
	},
}

// testLateExtendCannotShorten: an Extend(300ms) that times out on a
// majority (on the one node) and reaches it only after an Extend(10s)
// succeeded must not let the lease lapse there before its Until.
func testLateExtendCannotShorten(primitive string) func(*testing.T, env) {
	return byKind(extendedLeases[primitive], lateExtendCannotShorten)
}

// byKind runs test once for each lease kind of kinds, in a subtest named
// after the kind.
func byKind[K any](kinds map[string]K, test func(*testing.T, env, K)) func(*testing.T, env) {
	return func(t *testing.T, e env) {
		for kind, k := range kinds {
			t.Run(kind, func(t *testing.T) { test(t, e, k) })
		}
	}
}

func lateExtendCannotShorten(t *testing.T, e env, k extendedLease) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	var s faults.Schedule
	cl, fds := e.faultyClient(t, s.Hook)
	l, err := k.take(ctx, cl, n, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock(ctx)
	var delayed []int
	for i := range len(e.addrs)/2 + 1 {
		delayed = append(delayed, i)
		s.Add(faults.Rule{Node: i, Op: k.op(n), Key: k.key(n), Nth: 1, Fault: later})
	}
	l.Extend(ctx, 300*time.Millisecond) // times out on the delayed nodes: the lease keeps its Until
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("Extend(10s) after an Extend(300ms) timed out: %v", err)
	}
	flush(fds)
	time.Sleep(700 * time.Millisecond)
	when := fmt.Sprintf("700ms after an Extend(300ms), timed out on nodes %v, reached them behind an Extend(10s)", delayed)
	rivalRefused(t, ctx, l, func() (*core.Lease, error) { return k.rival(ctx, e.client(t, unhurried), n) }, when)
}

// rivalRefused fails t unless a rival's attempt is refused (ErrNotAcquired)
// while l is valid; when says what came before, for the message.
func rivalRefused(t *testing.T, ctx context.Context, l *core.Lease, rival func() (*core.Lease, error), when string) {
	t.Helper()
	r, err := rival()
	left := time.Until(l.Until())
	if r != nil {
		r.Unlock(ctx)
	}
	switch {
	case l.Err() != nil || left <= 0:
		t.Fatalf("%s: the lease ended before the check (%v, %v left): the check proves nothing", when, l.Err(), left)
	case err == nil:
		t.Fatalf("%s: a rival acquired while the lease was valid for %v more: two holders", when, left.Round(time.Millisecond))
	case !errors.Is(err, core.ErrNotAcquired):
		t.Fatalf("%s: the rival's attempt: got %v, want ErrNotAcquired", when, err)
	}
}
