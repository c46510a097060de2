package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testForceLockHolderKeptChanging: on every node, another holder takes the
// name between ForceLock's read and its swap, every time. ForceLock must
// take nothing (each node keeps the holder that came last, its fencing
// counter and forced marker untouched) and return ErrNotAcquired saying
// that the holder kept changing.
func testForceLockHolderKeptChanging(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t, unhurried, core.WithTTL(10*time.Second)).Mutex(n).TryLock)
	defer held.Unlock(ctx)
	admins := make([]redis.UniversalClient, len(e.addrs))
	for i := range admins {
		admins[i] = e.admin(t, i)
	}
	var mu sync.Mutex
	last := make([]string, len(e.addrs))
	w, _ := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Op == "MutexForceLock" {
			mu.Lock()
			defer mu.Unlock()
			last[c.Node] = rand.Text()
			admins[c.Node].Set(context.Background(), lockKey(n), last[c.Node], time.Minute)
		}
		return faults.Fault{}
	}, unhurried)
	fences := e.fences(t, ctx, n)
	taken, err := w.Mutex(n, core.WithTTL(10*time.Second)).ForceLock(ctx)
	if err == nil {
		taken.Unlock(ctx)
	}
	if !errors.Is(err, core.ErrNotAcquired) || !strings.Contains(err.Error(), "kept changing") {
		t.Fatalf("ForceLock while another holder took the name before each swap: %v, want ErrNotAcquired saying the holder kept changing", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, r := range admins {
		lock, _ := r.Get(ctx, lockKey(n)).Result()
		forced, _ := r.Exists(ctx, lockKey(n)+":forced").Result()
		if lock != last[i] || forced != 0 {
			t.Fatalf("node %d after ForceLock refused: holds %q (want the last holder %q), forced marker %d key(s) (want none)", i, lock, last[i], forced)
		}
	}
	if after := e.fences(t, ctx, n); after != fences {
		t.Fatalf("ForceLock refused on every node drew fencing tokens: counters %v, now %v", fences, after)
	}
}

// testForceLockOwnedRefused: ForceLock of a name that an owner holds is
// ErrInvalid and writes nothing: the owner's lease still extends.
func testForceLockOwnedRefused(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	c := e.client(t, unhurried, core.WithTTL(10*time.Second))
	owned := mustLock(t, ctx, c.Mutex(n, core.WithOwner("worker-1")).TryLock)
	defer owned.Unlock(ctx)
	fences := e.fences(t, ctx, n)
	taken, err := c.Mutex(n).ForceLock(ctx)
	if err == nil {
		taken.Unlock(ctx)
	}
	if !errors.Is(err, core.ErrInvalid) {
		t.Fatalf("ForceLock of a name an owner holds: %v, want ErrInvalid", err)
	}
	if err := owned.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("the owner's Extend after ForceLock was refused: %v, want nil", err)
	}
	if after := e.fences(t, ctx, n); after != fences {
		t.Fatalf("ForceLock refused drew fencing tokens: counters %v, now %v", fences, after)
	}
}

// fences is the fencing counter of name n on every node.
func (e env) fences(t *testing.T, ctx context.Context, n string) string {
	t.Helper()
	var s []string
	e.everyNode(t, func(r redis.UniversalClient) error {
		fence, _ := r.Get(ctx, fenceKey(n)).Result()
		s = append(s, fence)
		return nil
	})
	return strings.Join(s, ",")
}
