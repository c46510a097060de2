package conformance

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

func runLatch(t *testing.T, e env) {
	cases := map[string]func(*testing.T, env){
		"ReleasesAllWaiters": testLatchReleasesAll,
		"TrySetCountOnce":    testLatchTrySetOnce,
		"Count":              testLatchCount,
		"Expiry":             testLatchExpiry,
		"WaitSeesRearm":      testLatchRearm,
		"ContextEndsWait":    testLatchContextEndsWait,
		"BadInput":           testLatchBadInput,
		"LateSetRefused":     testLatchLateSetsRefused(24*time.Hour, heldBackSet, (*core.Latch).CountDown),
		"LateSetShortExpiry": testLatchLateSetsRefused(50*time.Millisecond, heldBackSet, (*core.Latch).CountDown),
		"LateCopyRefused":    testLatchLateSetsRefused(24*time.Hour, copiedSet, (*core.Latch).CountDown),
		"SetSentTwice":       testLatchLateSetsRefused(24*time.Hour, sentTwice, (*core.Latch).CountDown),
		"Delete":             testLatchDelete,
	}
	if e.strategy == core.Poll { // the copies land alike under either
		cases["OpenedCopyRefused"] = testLatchLateSetsRefused(24*time.Hour, copiedEverywhere, (*core.Latch).CountDown)
		cases["DeletedCopyRefused"] = testLatchLateSetsRefused(24*time.Hour, copiedEverywhere, (*core.Latch).Delete)
		cases["CountDownCopy"] = testLatchCountDownCopy
	}
	if e.redialed() {
		cases["ReconnectingWaiterServed"] = testReconnectingLatchWaiter
		cases["LateSubscriptionWaiterServed"] = testLateSubscriptionLatchWaiter
	}
	maps.Copy(cases, hostile(e, "Latch"))
	maps.Copy(cases, randomFaults(e, "Latch"))
	if len(e.addrs) >= 3 {
		cases["QuorumMinorityDown"] = testLatchMinorityDown
		cases["QuorumFailedSetIsUndone"] = testLatchSetUndone
		cases["QuorumCountIsHighest"] = testLatchCountHighest
	}
	runCases(t, e, cases)
}

// testLatchReleasesAll has nine waiters in three Clients wait on a latch
// of 3: none may return before the third CountDown (the latch model checks
// the history), and all must return within wokenWithin of it, which under
// Notify takes the wake-up to reach every waiter of each Client.
func testLatchReleasesAll(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	const count, clients, perClient = 3, 3, 3
	if ok, err := e.latchClient(t).Latch(n).TrySetCount(ctx, count); err != nil || !ok {
		t.Fatalf("TrySetCount(%d) on a new latch: got (%v, %v), want true", count, ok, err)
	}
	h := newHistory()
	type returned struct {
		err error
		at  time.Time
	}
	got := make(chan returned, clients*perClient)
	for c := range clients {
		l := e.latchClient(t).Latch(n)
		for w := range perClient {
			go func() {
				call := time.Now()
				err := l.Wait(ctx)
				if err == nil {
					h.add(c*perClient+w, latchOp{Wait: true}, nil, call, time.Now())
				}
				got <- returned{err, time.Now()}
			}()
		}
	}
	e.awaitWatching(t, ctx, latchKey(n))
	time.Sleep(100 * time.Millisecond) // all of them wait
	counter := e.latchClient(t).Latch(n)
	var last time.Time
	for i := range count {
		call := time.Now()
		if err := counter.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		last = time.Now()
		h.add(clients*perClient+1, latchOp{}, nil, call, last)
		if i < count-1 {
			time.Sleep(50 * time.Millisecond) // time for a waiter to return too early
		}
	}
	for range clients * perClient {
		r := <-got
		if r.err != nil {
			t.Fatalf("Wait: %v", r.err)
		}
		if d := r.at.Sub(last); d > wokenWithin {
			t.Fatalf("a waiter returned %v after the last CountDown, want within %v: not every waiter was woken", d, wokenWithin)
		}
	}
	h.check(t, latchModel(count))
}

func testLatchTrySetOnce(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	a, b := e.latchClient(t).Latch(n), e.latchClient(t).Latch(n)
	if ok, err := a.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount(2) on a new latch: got (%v, %v), want true", ok, err)
	}
	if ok, err := b.TrySetCount(ctx, 5); err != nil || ok {
		t.Fatalf("TrySetCount(5) on a set latch: got (%v, %v), want false", ok, err)
	}
	if c, err := b.Count(ctx); err != nil || c != 2 {
		t.Fatalf("Count after a refused TrySetCount: got (%d, %v), want the first count, 2", c, err)
	}
	for range 2 {
		if err := a.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Opened, the latch can be set again.
	if ok, err := b.TrySetCount(ctx, 5); err != nil || !ok {
		t.Fatalf("TrySetCount(5) on an opened latch: got (%v, %v), want true", ok, err)
	}
	if c, err := a.Count(ctx); err != nil || c != 5 {
		t.Fatalf("Count after setting it again: got (%d, %v), want 5", c, err)
	}
}

func testLatchCount(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l := e.latchClient(t).Latch(n)
	if c, err := l.Count(ctx); err != nil || c != 0 {
		t.Fatalf("Count of a new latch: got (%d, %v), want 0", c, err)
	}
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("Wait on a latch with no count: %v, want it to return at once", err)
	}
	if ok, err := l.TrySetCount(ctx, 3); err != nil || !ok {
		t.Fatalf("TrySetCount(3): got (%v, %v)", ok, err)
	}
	for want := int64(3); want >= 0; want-- {
		if c, err := l.Count(ctx); err != nil || c != want {
			t.Fatalf("Count: got (%d, %v), want %d", c, err, want)
		}
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if c, err := l.Count(ctx); err != nil || c != 0 {
		t.Fatalf("Count after a CountDown at zero: got (%d, %v), want 0", c, err)
	}
	if k := e.onNodes(t, ctx, latchKey(n)); k != 0 {
		t.Fatalf("the opened latch's key is on %d nodes, want none", k)
	}
}

// testLatchExpiry checks that a latch nobody counts down is dropped at its
// expiry, which releases its waiters.
func testLatchExpiry(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	const expiry = 400 * time.Millisecond
	l := e.latchClient(t).Latch(n, core.WithLatchExpiry(expiry))
	set := time.Now()
	if ok, err := l.TrySetCount(ctx, 5); err != nil || !ok {
		t.Fatalf("TrySetCount(5): got (%v, %v)", ok, err)
	}
	for i := range e.addrs {
		ttl := e.admin(t, i).PTTL(ctx, latchKey(n)).Val()
		if ttl > expiry || (ttl <= 0 && time.Since(set) < expiry) {
			t.Fatalf("node %d: the latch's TTL is %v, want within (0, %v]", i, ttl, expiry)
		}
	}
	if err := e.latchClient(t).Latch(n).Wait(ctx); err != nil {
		t.Fatalf("Wait on a latch that expires: %v", err)
	}
	// The server drops expired keys within about 100ms (hz 10); a waiter
	// learns of it by the expired event (Notify) or its next look (Poll).
	if d := time.Since(set); d < expiry || d > expiry+wokenWithin {
		t.Fatalf("Wait returned %v after TrySetCount with an expiry of %v, want within [%v, %v]", d, expiry, expiry, expiry+wokenWithin)
	}
	// Count is the highest count among the nodes, where the latch expires
	// later on those that TrySetCount reached later.
	for {
		c, err := l.Count(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if c == 0 {
			break
		}
		if d := time.Since(set); d > expiry+wokenWithin {
			t.Fatalf("Count %v after TrySetCount with an expiry of %v: got %d, want 0", d, expiry, c)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ok, err := l.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount on an expired latch: got (%v, %v), want true", ok, err)
	}
}

// testLatchRearm opens a latch and sets it again at once: a waiter that
// looked only after both must still return, as the latch did open.
func testLatchRearm(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l := e.latchClient(t).Latch(n)
	if ok, err := l.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount(1): got (%v, %v)", ok, err)
	}
	done := make(chan error, 1)
	waiter := e.latchClient(t).Latch(n)
	go func() { done <- waiter.Wait(ctx) }()
	e.awaitWatching(t, ctx, latchKey(n))
	opened := time.Now()
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if ok, err := l.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount(1) on the opened latch: got (%v, %v), want true", ok, err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(wokenWithin):
		t.Fatalf("Wait still blocked %v after the latch opened and was set again", time.Since(opened))
	}
}

func testLatchContextEndsWait(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l := e.latchClient(t).Latch(n)
	if ok, err := l.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount(1): got (%v, %v)", ok, err)
	}
	short, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	if err := e.latchClient(t).Latch(n).Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait past its deadline: got %v, want context.DeadlineExceeded", err)
	}
	// WithMaxAttempts does not bound Wait, which ends with its context.
	capped := e.client(t, core.WithMaxAttempts(1)).Latch(n)
	short, cancel = context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	if err := capped.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with WithMaxAttempts(1): got %v, want context.DeadlineExceeded", err)
	}
}

func testLatchBadInput(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.client(t)
	for _, count := range []int64{0, -1} {
		ok, err := c.Latch(n).TrySetCount(ctx, count)
		if !errors.Is(err, core.ErrInvalid) || ok || !strings.Contains(err.Error(), "at least 1") {
			t.Errorf("TrySetCount(%d): got (%v, %v), want ErrInvalid saying the count must be at least 1", count, ok, err)
		}
	}
	for _, bad := range []struct {
		what string
		l    *core.Latch
		ctx  context.Context
	}{
		{"an empty name", c.Latch(""), ctx},
		{"a zero expiry", c.Latch(n, core.WithLatchExpiry(0)), ctx},
		{"a negative expiry", c.Latch(n, core.WithLatchExpiry(-time.Second)), ctx},
		{"an expiry of a fraction of a millisecond", c.Latch(n, core.WithLatchExpiry(1500*time.Microsecond)), ctx},
		{"a nil context", c.Latch(n), nil},
	} {
		_, err1 := bad.l.TrySetCount(bad.ctx, 1)
		_, err2 := bad.l.Count(bad.ctx)
		for op, err := range map[string]error{"TrySetCount": err1, "Count": err2, "CountDown": bad.l.CountDown(bad.ctx), "Wait": bad.l.Wait(bad.ctx)} {
			if !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s with %s: got %v, want ErrInvalid", op, bad.what, err)
			}
		}
	}
	if k := e.onNodes(t, ctx, latchKey(n)); k != 0 {
		t.Errorf("bad input wrote the latch on %d nodes", k)
	}
}

func testLatchMinorityDown(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	addrs, down := e.withDown(t, e.tolerated())
	l := e.clientOn(t, addrs).Latch(n)
	down()
	if ok, err := l.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount with a minority down: got (%v, %v), want true", ok, err)
	}
	var wg sync.WaitGroup
	var waitErr error
	wg.Go(func() { waitErr = l.Wait(ctx) })
	for range 2 {
		if err := l.CountDown(ctx); err != nil {
			t.Fatalf("CountDown with a minority down: %v", err)
		}
	}
	wg.Wait()
	if waitErr != nil {
		t.Fatalf("Wait with a minority down: %v", waitErr)
	}
	if c, err := l.Count(ctx); err != nil || c != 0 {
		t.Fatalf("Count with a minority down: got (%d, %v), want 0", c, err)
	}

	addrs, down = e.withDown(t, e.tolerated()+1)
	l = e.clientOn(t, addrs).Latch(name(t))
	down()
	failFastWithMajorityDown(t, []namedCall{
		{"TrySetCount", func() error { _, err := l.TrySetCount(ctx, 1); return err }},
		{"CountDown", func() error { return l.CountDown(ctx) }},
		{"Count", func() error { _, err := l.Count(ctx); return err }},
	})
	waitsOut(t, ctx, "Wait", l.Wait)
}

// testLatchSetUndone sets the latch on a majority behind the library's
// back: a TrySetCount that wins only the rest reports false and is undone
// there.
func testLatchSetUndone(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	nodes := len(e.addrs)
	q := nodes/2 + 1
	for i := nodes - q; i < nodes; i++ {
		if err := e.admin(t, i).HSet(ctx, latchKey(n), "count", 7, "gen", 42).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := e.latchClient(t).Latch(n).TrySetCount(ctx, 3); err != nil || ok {
		t.Fatalf("TrySetCount with a count set on a majority: got (%v, %v), want false", ok, err)
	}
	if k := e.onNodes(t, ctx, latchKey(n)); k != q {
		t.Fatalf("the latch is on %d nodes after the refused TrySetCount, want %d: the minority's setting was not undone", k, q)
	}
}

// testLatchCountHighest has one node behind: Count reports the highest
// count, and Wait returns only when a majority is at zero.
func testLatchCountHighest(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l := e.latchClient(t).Latch(n)
	if ok, err := l.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount(2): got (%v, %v)", ok, err)
	}
	if err := e.admin(t, 0).HSet(ctx, latchKey(n), "count", 1).Err(); err != nil {
		t.Fatal(err)
	}
	if c, err := l.Count(ctx); err != nil || c != 2 {
		t.Fatalf("Count with one node at 1 and the rest at 2: got (%d, %v), want 2", c, err)
	}
	// Node 0 opens with the first CountDown; the rest with the second.
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := l.Wait(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait with one node of %d at zero: got %v, want it to block", len(e.addrs), err)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.Wait(ctx); err != nil {
		t.Fatalf("Wait with every node at zero: %v", err)
	}
}

// latchClient is the cell's client with a node timeout of a second: the
// Latch cases check what a Wait sees, not how fast, and a Wait on five
// nodes, loaded by the cell's other cases, has seen every node's call
// time out at the cells' 150ms.
func (e env) latchClient(t testing.TB) *core.Client {
	return e.client(t, core.WithNodeTimeout(time.Second))
}

// testLatchLateSetsRefused: TrySetCount(1)'s requests are held back,
// copied or sent twice (fault, by node, given the quorum), and its answer
// says how it went; where it set the latch, open (a CountDown, or Delete)
// opens it before the copies land. Once every request landed, the latch must be open:
// Count 0, and Wait returns at once. Then a TrySetCount of 3 sets it,
// which one CountDown does not open. (A latch set by requests landing
// after its undo, or by copies landing after it opened, would hold count
// 1 for the latch expiry, a day by default: Wait would block, and the
// application's next TrySetCount would be refused.) The latch expiry is
// given, as a short one must not shorten the guard.
func testLatchLateSetsRefused(expiry time.Duration, fault func(node, quorum int) faults.Fault, open func(*core.Latch, context.Context) error) func(*testing.T, env) {
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		quorum := len(e.addrs)/2 + 1
		c, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if call.Op == "LatchTrySet" && call.N == 1 {
				return fault(call.Node, quorum)
			}
			return faults.Fault{}
		}, core.WithNodeTimeout(100*time.Millisecond), core.WithLatchExpiry(expiry))
		ok, err := c.Latch(n).TrySetCount(ctx, 1)
		time.Sleep(time.Second) // the held-back requests land meanwhile
		l := e.latchClient(t).Latch(n)
		if ok {
			if err := open(l, ctx); err != nil {
				t.Fatal(err)
			}
		}
		flush(fds) // and the copies
		if count, cerr := l.Count(ctx); cerr != nil || count != 0 {
			t.Fatalf("TrySetCount returned (%v, %v) (and was opened if it set); once its requests landed, Count is (%d, %v), want 0: a late request set the latch", ok, err, count, cerr)
		}
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := l.Wait(wctx); err != nil {
			t.Fatalf("Wait on the open latch: %v, want it to return at once", err)
		}
		if ok, err := l.TrySetCount(ctx, 3); err != nil || !ok {
			t.Fatalf("TrySetCount(3) after the failed one: got (%v, %v), want true", ok, err)
		}
		if err := l.CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if count, err := l.Count(ctx); err != nil || count != 2 {
			t.Fatalf("Count after TrySetCount(3) and a CountDown: got (%d, %v), want 2", count, err)
		}
	}
}

// The requests to a majority held back past the undo; with a latch expiry
// shorter than that; a copy of node 0's landing after the undo while the
// others are lost; each request sent twice.
var (
	heldBackSet = func(node, quorum int) faults.Fault {
		if node < quorum {
			return faults.Fault{Kind: faults.Delay, After: 300 * time.Millisecond}
		}
		return faults.Fault{}
	}
	copiedSet = func(node, _ int) faults.Fault {
		if node == 0 {
			return faults.Fault{Kind: faults.Duplicate, After: time.Hour}
		}
		return faults.Fault{Kind: faults.Drop}
	}
	sentTwice = func(int, int) faults.Fault { return faults.Fault{Kind: faults.Retry} }
	// copiedEverywhere sets the latch, and copies of its requests land on
	// every node later.
	copiedEverywhere = func(int, int) faults.Fault { return faults.Fault{Kind: faults.Duplicate, After: time.Hour} }
)
