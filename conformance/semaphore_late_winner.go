package conformance

import (
	"context"
	"maps"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testSemaphoreWinnerLandsLate: once a Semaphore waiter is in line, its
// attempts stall on the cell's last node (a vote does not wait for it):
// it wins on the others and leaves the line on the last node; there
// another lease holds the one permit (a lease of a majority that node is
// part of) when the stalled attempts land. Landing then, neither the
// winning one nor one that failed before it may put the waiter back in
// line: the waiter holds its lease and waits for nothing, yet its ticket,
// first in line by its place, would hold that node's line up until it
// lapsed, and take the wake-ups of that node's releases from the waiters
// behind it.
func testSemaphoreWinnerLandsLate(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	last := len(e.addrs) - 1
	var stall atomic.Bool // once the waiter is in line
	c, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Node == last && call.Op == "SemaphoreAcquire" && stall.Load() {
			return faults.Fault{Kind: faults.Stall, After: time.Hour}
		}
		return faults.Fault{}
	}, core.WithTTL(time.Minute))
	holder, err := e.client(t).Semaphore(n, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := e.inLine(t, ctx, semKey(n, ":q"), 1, func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 1).Acquire(ctx, 1) })
	stall.Store(true)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	// The waiter leaves the line where it did not win, in the background.
	lastNode := e.admin(t, last)
	for deadline := time.Now().Add(5 * time.Second); lastNode.ZCard(ctx, semKey(n, ":q")).Val() > 0; {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not leave the line on the last node within 5s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	otherHoldsPermit(t, ctx, lastNode, n, "1")
	flush(fds) // the stalled attempt lands
	time.Sleep(300 * time.Millisecond)
	if line := lastNode.ZRange(ctx, semKey(n, ":q"), 0, -1).Val(); len(line) > 0 {
		t.Fatalf("node %d: the waiter holds its lease, and the line holds %v (its tickets: %v)", last, line,
			e.ticketValues(t, ctx, last, semKey(n, "")))
	}
	// What may remain is the mark of the waiter's leave, which refused them.
	live := e.ticketValues(t, ctx, last, semKey(n, ""))
	maps.DeleteFunc(live, func(_, v string) bool { return v == "left" })
	if len(live) > 0 {
		t.Fatalf("node %d: the waiter holds its lease, and %s live tickets remain: %v", last, strconv.Itoa(len(live)), live)
	}
}
