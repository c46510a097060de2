package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// Cases of a waiter that rotates its token or moves between lines. A
// MultiLock waiter that is still waiting leaves the queues of the names it
// no longer waits at, and keeps its tickets (one per name) for the whole
// Lock: that leave must not mark them as left (lib/left.lua), or the acquire
// scripts would refuse the live waiter at those names, even free ones. A
// waiter that rotated its token takes over only grants to tokens it gave
// up, and counts no grant heard before the rotation.

// awaitQueued waits until the queue key has a member on node i.
func awaitQueued(t *testing.T, ctx context.Context, e env, i int, queue string, done <-chan locked) {
	t.Helper()
	admin := e.admin(t, i)
	for {
		if n, err := admin.ZCard(ctx, queue).Result(); err == nil && n > 0 {
			return
		}
		select {
		case r := <-done:
			t.Fatalf("the waiter's Lock returned (%v) before it queued at %s", r.err, queue)
		case <-ctx.Done():
			t.Fatalf("the waiter never queued at %s", queue)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// testMultiMarkSparesLiveWaiter: on a Redis Cluster a MultiLock takes its
// names one by one (MutexAcquire with each name's ticket). Waiter W over
// {a, b} queues at b (held by X); Y takes a; X's release grants b to W,
// whose next attempt stops at a and leaves b's queue. Y's release grants a
// to W: both names are free, for W alone, and W must take them at once.
// Leaving b's queue while still waiting must not mark b's ticket as left,
// or MutexAcquire would refuse W there until the mark expired.
func testMultiMarkSparesLiveWaiter(t *testing.T, e env) {
	ctx := ctxFor(t, 40*time.Second)
	names := e.multiNames(t, ctx, 2)
	a, b := names[0], names[1]
	ttl := 10 * time.Second
	c := e.client(t, core.WithTTL(ttl))
	hb, err := c.Mutex(b).Lock(ctx)
	if err != nil {
		t.Fatalf("X's Lock of b: %v", err)
	}
	w := e.client(t, core.WithTTL(ttl))
	done := startLock(ctx, w.MultiLock(names).Lock)
	awaitQueued(t, ctx, e, 0, queueKey(b), done)
	ha, err := c.Mutex(a).Lock(ctx)
	if err != nil {
		t.Fatalf("Y's Lock of a: %v", err)
	}
	if err := hb.Unlock(ctx); err != nil {
		t.Fatalf("X's Unlock of b: %v", err)
	}
	awaitQueued(t, ctx, e, 0, queueKey(a), done)
	if err := ha.Unlock(ctx); err != nil {
		t.Fatalf("Y's Unlock of a: %v", err)
	}
	freed := time.Now()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("W's Lock: %v", r.err)
		}
		took := time.Since(freed)
		r.l.Unlock(ctx)
		if took > 3*time.Second {
			t.Fatalf("W took %v to lock %v after both names were free for it alone (TTL %v): its own leave's mark refused it", took.Round(time.Millisecond), names, ttl)
		}
	case <-time.After(3 * time.Second):
		marks := []string{}
		for _, n := range names {
			for _, v := range e.ticketValues(t, ctx, 0, lockKey(n)) {
				if v == "left" {
					marks = append(marks, n)
				}
			}
		}
		t.Fatalf("W, a live waiter, still has not locked %v 3s after both names were free for it alone (TTL %v); names whose ticket is marked left: %v",
			names, ttl, marks)
	}
}

// testMultiMarkSparesWaiterAfterNodeError: on three single servers a
// MultiLock takes all names in one script. W's first attempt that joins
// fails on node 0 (dropped); W then leaves, on node 0, the queues of the
// names other than the one it waits at. That leave must not mark their
// tickets as left: multi_acquire refuses an attempt with a marked ticket.
// After the holder's release node 1 stops answering: nodes 0 and 2 are a
// majority, both names are free on them, and W must win.
func testMultiMarkSparesWaiterAfterNodeError(t *testing.T, e env) {
	ctx := ctxFor(t, 40*time.Second)
	names := e.multiNames(t, ctx, 2)
	a := names[0]
	ttl := 10 * time.Second
	var mu sync.Mutex
	dropped := false
	var node1Down atomic.Bool
	w, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Op != "MultiLockAcquire" {
			return faults.Fault{}
		}
		joining := len(call.Tickets) >= 1 && !strings.HasSuffix(call.Tickets[0], ticketInfix)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case call.Node == 0 && joining && !dropped:
			dropped = true
			return faults.Fault{Kind: faults.Drop}
		case call.Node == 1 && node1Down.Load():
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(ttl))
	// The holder must hold a on every node, or W takes it on a node it
	// missed and never queues there: a patient node timeout, and a check.
	c := e.client(t, core.WithTTL(ttl), core.WithNodeTimeout(3*time.Second))
	ha, err := c.Mutex(a).Lock(ctx)
	if err != nil {
		t.Fatalf("the holder's Lock of a: %v", err)
	}
	e.everyNode(t, func(r redis.UniversalClient) error {
		if n, err := r.Exists(ctx, lockKey(a)).Result(); err != nil || n == 0 {
			return fmt.Errorf("the holder's lease does not hold a there (%v)", err)
		}
		return nil
	})
	done := startLock(ctx, w.MultiLock(names).Lock)
	awaitQueued(t, ctx, e, 2, queueKey(a), done)
	for {
		mu.Lock()
		d := dropped
		mu.Unlock()
		if d {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // the leave on node 0 runs right after the attempt
	node1Down.Store(true)
	if err := ha.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock: %v", err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("W's Lock: %v", r.err)
		}
		r.l.Unlock(ctx)
	case <-time.After(3 * time.Second):
		marked := 0
		for _, n := range names {
			for _, v := range e.ticketValues(t, ctx, 0, lockKey(n)) {
				if v == "left" {
					marked++
				}
			}
		}
		t.Fatalf("W, a live waiter, has not locked %v 3s after the release, with nodes 0 and 2 up and both names free there (TTL %v); tickets marked left on node 0: %d",
			names, ttl, marked)
	}
}

// testHeldBackAttemptSparesLease: a waiter whose attempts k = 2, 3, ...
// time out on node k-2 alone (held back, landing later, with their undos
// behind them) rotates its token each time; its next attempt joins the
// line everywhere with the current token T, and the holder's release
// grants T on every node: the waiter holds a lease. Then the held-back
// attempts land. Their tokens are older than T (lib/take_over.lua), so
// none may take T's lock over, and the undo behind each must find nothing
// of its own to release: the lock stays held on a majority while the
// lease is valid.
func testHeldBackAttemptSparesLease(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) { heldBackAttemptSparesLease(t, e, x) }
}

func heldBackAttemptSparesLease(t *testing.T, e env, x exclusiveLock) {
	ctx, n := ctxFor(t, 40*time.Second), name(t)
	quorum := len(e.addrs)/2 + 1
	const land = 5 * time.Second // when a held-back attempt lands; its undo a second later
	var mu sync.Mutex
	armed := make([]bool, len(e.addrs))
	seen := make([]int, len(e.addrs)) // acquire calls per node
	w, fds := e.faultyClient(t, func(call faults.Call) faults.Fault {
		mu.Lock()
		defer mu.Unlock()
		k := call.Node
		switch {
		case call.Op == x.acquire:
			seen[k] = call.N
			if k < quorum && call.N == k+2 { // attempt k+2: its first joining attempt is 2
				armed[k] = true
				return faults.Fault{Kind: faults.Delay, After: land}
			}
		case slices.Contains(x.undo, call.Op) && armed[k]:
			armed[k] = false
			return faults.Fault{Kind: faults.Delay, After: land + time.Second}
		}
		return faults.Fault{}
	}, core.WithTTL(10*time.Second))
	holder, err := x.lock(ctx, e.client(t, core.WithTTL(time.Second), core.WithAutoExtend()), n)
	if err != nil {
		t.Fatalf("the holder's Lock: %v", err)
	}
	done := startTaking(ctx, x.lock, w, n)
	// Wait for the first attempt after the held-back ones (quorum+2),
	// which joins the line on every node with the current token.
	for {
		mu.Lock()
		ok := !slices.ContainsFunc(seen, func(s int) bool { return s < quorum+2 })
		mu.Unlock()
		if ok {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the waiter's Lock returned (%v) before its attempts were held back", r.err)
		case <-ctx.Done():
			t.Fatalf("the waiter made too few attempts: %v", seen)
		case <-time.After(10 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond)
	if err := holder.Unlock(ctx); err != nil {
		t.Fatalf("the holder's Unlock: %v", err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the waiter's Lock after the release: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	for _, fd := range fds {
		fd.Wait() // the held-back attempts and their undos land
	}
	held := 0
	for i := range e.addrs {
		if v, err := e.admin(t, i).Exists(ctx, lockKey(n)).Result(); err == nil && v == 1 {
			held++
		}
	}
	other, err := e.client(t).Mutex(n).TryLock(ctx)
	left := time.Until(r.l.Until())
	if r.l.Err() != nil || left <= 0 {
		t.Fatalf("the waiter's lease ended before the check (%v, %v left): the check proves nothing", r.l.Err(), left)
	}
	if err == nil {
		defer other.Unlock(ctx)
		t.Fatalf("another client locked %s (token %d) while the waiter's lease (token %d) is valid for %v more: the waiter's held-back attempts took over its own lease's lock for their older tokens, and their undos released it (%d of %d nodes hold a lock)",
			n, other.Token(), r.l.Token(), left.Round(time.Millisecond), held, len(e.addrs))
	}
	if held < quorum {
		t.Fatalf("%d of %d nodes hold the lock of a lease valid for %v more", held, len(e.addrs), left.Round(time.Millisecond))
	}
}

// testRotationForgetsGrants: a waiter's attempt (token T1) is refused by
// the holder on nodes 1 and 2 and queues there; node 0 is free and grants
// it; short of a majority it is undone, and that undo fails on node 0, so
// the waiter rotates to T2. While the undo is out, the holder releases:
// nodes 1 and 2 grant T1, with the secret of the attempt, and the waiter
// hears them before it rotates. Its lease must not be built from those
// grants under T2 while the nodes hold T1 (it could not be extended, and
// its Unlock would free nothing): the rotation forgets them, and the next
// attempt takes over T1's grants for T2.
func testRotationForgetsGrants(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	hc := e.clientOn(t, e.addrs[1:], core.WithTTL(10*time.Second))
	holder, err := hc.Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("the holder's Lock on nodes 1..: %v", err)
	}
	var once sync.Once
	w, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		// Undos on node 0: attempt 1 (does not queue), 2 (queues, first
		// in line: the waiter attempts again at once), 3 (waits next).
		if call.Node == 0 && slices.Contains(mutexUndo, call.Op) && call.N == 3 {
			once.Do(func() {
				holder.Unlock(ctx)
				time.Sleep(300 * time.Millisecond) // the grants reach the waiter
			})
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(10*time.Second))
	l, err := w.Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("the waiter's Lock: %v", err)
	}
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		held := 0
		for i := range e.addrs {
			if v, _ := e.admin(t, i).Exists(ctx, lockKey(n)).Result(); v == 1 {
				held++
			}
		}
		t.Fatalf("Extend of a lease Lock just returned (valid %v more): %v (%d of %d nodes hold a lock, under another token)",
			time.Until(l.Until()).Round(time.Millisecond), err, held, len(e.addrs))
	}
	l.Unlock(ctx)
}
