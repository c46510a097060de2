package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// leaseCheckKinds are the kinds of lease of each primitive, by the name of
// their case: how to take one, and the key that holds it on a node (a
// MultiLock's second name).
var leaseCheckKinds = map[string]map[string]struct {
	lock func(c *core.Client, n string) func(context.Context) (*core.Lease, error)
	key  func(n string) string
}{
	"Mutex": {
		"LeaseCheck": {func(c *core.Client, n string) func(context.Context) (*core.Lease, error) { return c.Mutex(n).Lock }, lockKey},
		"LeaseCheckOwned": {func(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
			return c.Mutex(n, core.WithOwner("worker-1")).Lock
		}, lockKey},
	},
	"FairMutex": {
		"LeaseCheck": {func(c *core.Client, n string) func(context.Context) (*core.Lease, error) { return c.FairMutex(n).Lock },
			func(n string) string { return fairKey(n, "") }},
	},
	"RWMutex": {
		"LeaseCheckWriter": {func(c *core.Client, n string) func(context.Context) (*core.Lease, error) { return c.RWMutex(n).Lock },
			func(n string) string { return rwKey(n, ":w") }},
		"LeaseCheckReader": {func(c *core.Client, n string) func(context.Context) (*core.Lease, error) { return c.RWMutex(n).RLock },
			func(n string) string { return rwKey(n, ":r") }},
	},
	"Semaphore": {
		"LeaseCheck": {func(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
			return func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 2).Acquire(ctx, 1) }
		}, func(n string) string { return semKey(n, "") }},
	},
	"MultiLock": {
		"LeaseCheck": {func(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
			return c.MultiLock([]string{n + "/a", n + "/b"}).Lock
		}, func(n string) string { return lockKey(n + "/b") }},
	},
}

// leaseCheckCases are primitive's cases of Lease.Valid and Lease.TTL. The
// strategy does not matter to them: they run under Poll alone. With them,
// the cases of a lease whose key vanished (vanish.go).
func leaseCheckCases(e env, primitive string) map[string]func(*testing.T, env) {
	cases := vanishCases(e, primitive)
	if e.strategy != core.Poll {
		return cases
	}
	for name, k := range leaseCheckKinds[primitive] {
		cases[name] = func(t *testing.T, e env) { testLeaseCheck(t, e, k.lock, k.key) }
	}
	return cases
}

// testLeaseCheck checks a lease on the servers: valid, with a TTL within
// the one asked for, after its acquisition; with a TTL within what its key
// has left once an operator shortens the key's expiry; still valid after another
// client deletes its key on a minority of the nodes that hold it; lost
// (Valid false, Done closed, ErrLost) once fewer than a majority hold it,
// though some still do; ErrNotHeld after Unlock.
func testLeaseCheck(t *testing.T, e env, lock func(c *core.Client, n string) func(context.Context) (*core.Lease, error), key func(string) string) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = 10 * time.Second
	c := e.client(t, core.WithTTL(ttl))
	quorum := len(e.addrs)/2 + 1
	valid := func(l *core.Lease, what string, want bool) {
		t.Helper()
		ok, err := l.Valid(ctx)
		if err != nil || ok != want {
			t.Fatalf("Valid %s: %v, %v; want %v, nil", what, ok, err, want)
		}
		left, err := l.TTL(ctx)
		switch {
		case want && (err != nil || left <= 0 || left > ttl):
			t.Fatalf("TTL %s: %v, %v; want within (0, %v], nil", what, left, err, ttl)
		case !want && (left != 0 || !errors.Is(err, core.ErrLost)):
			t.Fatalf("TTL %s: %v, %v; want 0, ErrLost", what, left, err)
		}
	}

	l := mustLock(t, ctx, lock(c, n))
	valid(l, "after the acquisition", true)
	var holding []int // the nodes that hold it: a round decided by a majority may leave the others out
	for i := range e.addrs {
		if v, err := e.admin(t, i).Exists(ctx, key(n)).Result(); err != nil {
			t.Fatal(err)
		} else if v == 1 {
			holding = append(holding, i)
		}
	}
	// The key goes, with the lease's entry in it, when it expires: TTL is
	// no more than that, whatever the entry says.
	const shortened = 5 * time.Second
	for _, i := range holding {
		if err := e.admin(t, i).PExpire(ctx, key(n), shortened).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if left, err := l.TTL(ctx); err != nil || left <= 0 || left > shortened {
		t.Fatalf("TTL with its key's expiry shortened to %v: %v, %v; want within (0, %v], nil", shortened, left, err, shortened)
	}
	del := func(nodes []int) {
		t.Helper()
		for _, i := range nodes {
			if err := e.admin(t, i).Del(ctx, key(n)).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if minority := min(len(e.addrs)-quorum, len(holding)-quorum); minority > 0 {
		del(holding[:minority])
		holding = holding[minority:]
		valid(l, "with its key deleted on a minority", true)
	}
	del(holding[:len(holding)-quorum+1]) // quorum-1 nodes still hold it
	valid(l, "with its key deleted on a majority", false)
	select {
	case <-l.Done():
	default:
		t.Fatal("Done is open after Valid found the lease lost")
	}
	if err := l.Err(); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Err after Valid found the lease lost: %v, want ErrLost", err)
	}

	l = mustLock(t, ctx, lock(c, name(t))) // the lost lease may keep its name until its keys expire
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.Valid(ctx); ok || !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Valid after Unlock: %v, %v; want false, ErrNotHeld", ok, err)
	}
	if left, err := l.TTL(ctx); left != 0 || !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("TTL after Unlock: %v, %v; want 0, ErrNotHeld", left, err)
	}
}
