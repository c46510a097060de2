package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testSemaphoreLostWinnerLeaveRetried: a Semaphore waiter for two permits
// wins on every node but the last, where another lease holds one of them
// (a lease of a majority that node is part of), so it is still in line
// there; it leaves that line in the background, and that leave is
// dropped, as are the next two. It must be asked again until one lands:
// the waiter's ticket is gone from the last node's line within two
// seconds, long before it would lapse. Else it heads that line, a waiter
// that holds its lease, and takes the wake-ups of that node's releases
// from the waiters behind it.
func testSemaphoreLostWinnerLeaveRetried(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	last := len(e.addrs) - 1
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Node == last && call.Op == "SemaphoreRelease" && call.N <= lostLeaves {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(10*time.Second))
	holder, err := e.client(t).Semaphore(n, 2).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := e.inLine(t, ctx, semKey(n, ":q"), 1, func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 2).Acquire(ctx, 2) })
	// Another lease holds the last node's other permit.
	lastNode := e.admin(t, last)
	taken := lastNode.ZRange(ctx, semKey(n, ""), 0, -1).Val()
	free := "1"
	if slices.Contains(taken, "1") {
		free = "2"
	}
	otherHoldsPermit(t, ctx, lastNode, n, free)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	deadline := time.Now().Add(2 * time.Second)
	for lastNode.ZCard(ctx, semKey(n, ":q")).Val() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("node %d: the waiter holds its lease, and its first %d leaves there dropped, it is still in line after 2s: %v", last, lostLeaves,
				lastNode.ZRange(ctx, semKey(n, ":q"), 0, -1).Val())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// otherHoldsPermit has a lease no Client of the case knows hold the
// Semaphore n's permit slot on node, for a minute: a lease of a majority
// that node is part of.
func otherHoldsPermit(t *testing.T, ctx context.Context, node redis.UniversalClient, n, slot string) {
	t.Helper()
	now, err := node.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	const other = "OTHERLEASEOTHERLEASEOTHERL"
	if err := node.ZAdd(ctx, semKey(n, ""), redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: slot}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := node.HSet(ctx, semKey(n, ":holders"), slot, other, holdersTokenField+other, slot).Err(); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{semKey(n, ""), semKey(n, ":holders")} {
		node.Expire(ctx, k, time.Minute)
	}
}
