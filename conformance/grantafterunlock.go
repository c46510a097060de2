package conformance

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testMultiGrantAfterUnlock: a MultiLock waiter W queues on the nodes
// where one-node Clients' Mutexes Y0, Y1, ... hold its first name, one
// more than a quorum tolerates; all but Y0 release, and W wins the other
// nodes. W's leave of node 0's queue (it won) is lost until W has
// unlocked and Y0 has released, which grants the name to W's ticket
// there. No one holds W's lease any more: the grant must be passed on, not
// kept for W's TTL, and the names must be free on every node soon after.
func testMultiGrantAfterUnlock(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	names := []string{n, n + "/2"}
	const ttl = 10 * time.Second
	var lose atomic.Bool
	lose.Store(true)
	w, _ := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Node == 0 && c.Op == "MutexLeave" && lose.Load() {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(ttl))
	// Y0, Y1, ... hold the first name on nodes 0, 1, ...: enough that W
	// cannot win before it queues there.
	y := make([]*core.Lease, e.tolerated()+1)
	for i := range y {
		l, err := e.clientOn(t, e.addrs[i:i+1], core.WithTTL(ttl)).Mutex(names[0]).Lock(ctx)
		if err != nil {
			t.Fatalf("Y%d's Lock on node %d: %v", i, i, err)
		}
		y[i] = l
	}
	done := startLock(ctx, w.MultiLock(names).Lock)
	for i := range y {
		awaitQueued(t, ctx, e, i, queueKey(names[0]), done)
	}
	// The others' releases grant their nodes to W, which then wins.
	for _, l := range y[1:] {
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Y's Unlock: %v", err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("W's Lock after the releases: %v", r.err)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatalf("W's Unlock: %v", err)
	}
	if err := y[0].Unlock(ctx); err != nil {
		t.Fatalf("Y0's Unlock: %v", err)
	}
	lose.Store(false)
	// The names are free on every node well before W's TTL (10s) ends.
	e.gone(t, ctx, 2*time.Second, lockKey(names[0]), lockKey(names[1]))
}
