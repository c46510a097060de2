package conformance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testHostileForcedMarker: another program left a string where a lock's
// forced marker goes (a sorted set). ForceUnlock of the held name, which
// writes the marker, must either run whole or, failing, write nothing, so
// that the nodes hold what they held before (the lease's lock key, the
// fencing counter).
func testHostileForcedMarker(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Set(ctx, lockKey(n)+":forced", "not a sorted set", time.Minute).Err()
	})
	c := e.client(t, core.WithTTL(10*time.Second))
	held := mustLock(t, ctx, c.Mutex(n).TryLock)
	defer held.Unlock(ctx)
	before := e.keysOf(t, ctx, n)
	err := c.Mutex(n).ForceUnlock(ctx)
	if !errors.Is(err, core.ErrServerError) || !strings.Contains(err.Error(), "forced marker") {
		t.Fatalf("ForceUnlock with a malformed forced marker: got %v, want ErrServerError naming the marker", err)
	}
	if after := e.keysOf(t, ctx, n); after != before {
		t.Fatalf("ForceUnlock with a malformed forced marker failed (%v) but wrote: the lock and fencing counter were %v, now %v; want nothing written", err, before, after)
	}
}

// keysOf is the lock key's value and the fencing counter of name n on
// every node.
func (e env) keysOf(t *testing.T, ctx context.Context, n string) string {
	t.Helper()
	var s [][2]string
	e.everyNode(t, func(r redis.UniversalClient) error {
		lock, _ := r.Get(ctx, lockKey(n)).Result()
		fence, _ := r.Get(ctx, fenceKey(n)).Result()
		s = append(s, [2]string{lock, fence})
		return nil
	})
	return fmt.Sprint(s)
}
