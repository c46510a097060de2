package conformance

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testSemaphoreGiveUpLandsLate: a Semaphore waiter for two permits waits
// in line while two leases hold one each; then its attempts are slow on
// the cell's last node (they land there 2s later). One lease's
// release wakes it, its attempt is refused on the others (one permit is
// free) and still out on the last node when the waiter gives up and
// leaves the line; the attempt lands after that, where the other lease
// still holds its permit, and its undo, slower still, after the landing.
// The waiter is gone: it must not stay in line there, first by its place,
// until its ticket lapsed.
func testSemaphoreGiveUpLandsLate(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	last := len(e.addrs) - 1
	var slow atomic.Bool // once the waiter is in line
	c, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
		switch {
		case call.Node != last || !slow.Load():
		case call.Op == "SemaphoreAcquire":
			return faults.Fault{Kind: faults.Stall, After: 2 * time.Second}
		case call.Op == "SemaphoreRelease" && !strings.HasSuffix(call.Keys[len(call.Keys)-1], ticketInfix+"a:"): // an undo, not the leave
			return faults.Fault{Kind: faults.Delay, After: 4 * time.Second}
		}
		return faults.Fault{}
	}, core.WithTTL(time.Minute))
	s := e.client(t, patient).Semaphore(n, 2)
	var held [2]*core.Lease
	for i := range held {
		l, err := s.TryAcquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Unlock(ctx)
		held[i] = l
		// Where a permit is free, the waiter takes it there rather than join.
		e.slotsOnEveryNode(t, ctx, n, l.ID())
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := e.inLine(t, ctx, semKey(n, ":q"), 1, func(context.Context) (*core.Lease, error) { return c.Semaphore(n, 2).Acquire(wctx, 2) })
	slow.Store(true)
	if err := held[0].Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); fds[last].Calls("SemaphoreAcquire") < 2; {
		if time.Now().After(deadline) {
			t.Fatal("the release did not wake the waiter within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	woken := time.Now()
	time.Sleep(100 * time.Millisecond) // its vote is in: refused
	cancel()
	if r := <-got; r.err == nil {
		r.l.Unlock(ctx)
		t.Fatal("the waiter took two permits while one is held")
	}
	lastNode := e.admin(t, last)
	if k := lastNode.ZCard(ctx, semKey(n, ":q")).Val(); k > 0 || time.Since(woken) > 1900*time.Millisecond {
		t.Fatalf("the waiter had not left the line on node %d (%d in line) %v after its wake-up, before its attempt landed", last, k, time.Since(woken))
	}
	time.Sleep(time.Until(woken.Add(5 * time.Second))) // the attempt landed, then its undo
	if line := lastNode.ZRange(ctx, semKey(n, ":q"), 0, -1).Val(); len(line) > 0 {
		t.Fatalf("node %d: the waiter gave up, and the line holds %v (its tickets: %v)", last, line,
			e.ticketValues(t, ctx, last, semKey(n, "")))
	}
}
