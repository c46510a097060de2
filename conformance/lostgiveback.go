package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testMultiLostGiveBackRetried: a MultiLock waiter whose context ended
// while a release granted it every name (multi_release.lua) gives the
// names back as it quits, and that give-back is lost on node 0 (dropped),
// three times in a row. It is asked again until it lands: the next Lock gets the lock without waiting out the
// TTL of a grant to a waiter that is gone. (On one node, node 0 is the
// quorum; with more, the case also passes on the majority alone.)
func testMultiLostGiveBackRetried(t *testing.T, e env) {
	x := exclusiveLocks["MultiLock"]
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	c := e.client(t, core.WithTTL(10*time.Second))
	holder, err := x.lock(ctx, c, n)
	if err != nil {
		t.Fatalf("the holder's Lock: %v", err)
	}
	waiter, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Node == 0 && call.Op == "MultiLockRelease" && call.N <= lostLeaves {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(10*time.Second))
	waiterCtx := &endsQuietly{Context: ctx}
	got := e.inLine(t, ctx, x.line(n), 1, func(context.Context) (*core.Lease, error) { return x.lock(waiterCtx, waiter, n) })
	waiterCtx.end()
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock: %v", err)
	}
	if r := <-got; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the waiter whose context ended: got %v, want context.Canceled", r.err)
	}
	if err := takenSoon(ctx, x.lock, c, n); err != nil {
		t.Fatalf("a Lock after the waiter gave up, its give-back lost on node 0: %v (the names are still granted to it?)", err)
	}
}
