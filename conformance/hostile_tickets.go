package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
)

// testHostileReleaseWritesNothing hands primitive p's lease (a Mutex's,
// a one-permit Semaphore's) to a queued waiter, then makes its name's key
// spoiled(name) a string (another program's key under the name): its
// line, or its line's tickets hash. The release of the waiter's lease,
// which reads both before it writes (it marks the ticket, samples the
// tickets, or finds the head of the line), fails (WRONGTYPE) and must
// write nothing (the lease's hold stays), as every script that fails
// does.
func testHostileReleaseWritesNothing(p string, spoiled func(name string) string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		held := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return x.try(ctx, e.hostileClient(t), n) })
		waiter := e.hostileClient(t, core.WithTTL(5*time.Second))
		got := e.inLine(t, ctx, x.line(n), 1, func(ctx context.Context) (*core.Lease, error) { return x.lock(ctx, waiter, n) })
		time.Sleep(50 * time.Millisecond) // its attempt is done
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("the waiter: %v", r.err)
		}
		e.everyNode(t, func(c redis.UniversalClient) error {
			return c.Set(ctx, spoiled(n), "x", time.Minute).Err()
		})
		before, slots := e.stringsUnder(t, ctx, lockKey(n)), e.slotsOf(t, ctx, p, n)
		uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := r.l.Unlock(uctx); err == nil {
			t.Fatalf("Unlock over %s, a string: no error", spoiled(n))
		}
		after := e.stringsUnder(t, ctx, lockKey(n))
		for k, v := range after {
			if before[k] != v {
				t.Errorf("a failed release wrote %s: it held %q, holds %q", k, before[k], v)
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				t.Errorf("a failed release deleted %s", k)
			}
		}
		if after := e.slotsOf(t, ctx, p, n); !slices.Equal(slots, after) {
			t.Errorf("a failed release changed the permits held: %v by node, now %v", slots, after)
		}
	}
}

// slotsOf is how many permit slots each node holds for primitive p's name
// n, none for a primitive that is no Semaphore: its hold is no string.
func (e env) slotsOf(t testing.TB, ctx context.Context, p, n string) []int64 {
	var slots []int64
	if p == "Semaphore" {
		for i := range e.addrs {
			slots = append(slots, e.heldSlots(t, ctx, i, n))
		}
	}
	return slots
}

// lineTickets is the tickets hash of primitive p's line of name.
func lineTickets(p string) func(name string) string {
	return func(n string) string { return ticketsKey(lineStem(exclusiveLocks[p].line(n))) }
}

// testHostileFenceOwnedLapsedTicket is HostileFenceCounterOwned on a name
// whose tickets hash holds a ticket that lapsed (a waiter that died; its
// join keeps the hash a TTL longer): the owner's attempt, refused for the
// malformed counter, must write nothing, the hash and its expiry included.
func testHostileFenceOwnedLapsedTicket(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	stem := lockKey(n)
	e.everyNode(t, func(r redis.UniversalClient) error {
		if err := r.Set(ctx, fenceKey(n), "nan", time.Minute).Err(); err != nil {
			return err
		}
		now, err := r.Time(ctx).Result()
		if err != nil {
			return err
		}
		lapsed := fmt.Sprintf("%d:o:dead", now.Add(-time.Second).UnixMilli())
		if err := r.HSet(ctx, ticketsKey(stem), ticketKey(stem, "dead:ticket"), lapsed).Err(); err != nil {
			return err
		}
		return r.Expire(ctx, ticketsKey(stem), time.Minute).Err()
	})
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if !strings.Contains(call.Op, "Acquire") {
			return faults.Fault{Kind: faults.Drop} // no undo: what the attempt wrote stays
		}
		return faults.Fault{}
	}, core.WithNodeTimeout(time.Second), core.WithTTL(5*time.Second))
	before := e.nameState(t, ctx, n)
	l, err := c.Mutex(n, core.WithOwner("a")).TryLock(ctx)
	if err == nil {
		l.Unlock(ctx)
		t.Fatal("acquired over a malformed counter, want ErrServerError")
	}
	if !errors.Is(err, core.ErrServerError) {
		t.Fatalf("%v; want ErrServerError", err)
	}
	if after := e.nameState(t, ctx, n); !maps.Equal(before, after) {
		t.Fatalf("the refused attempt wrote: the nodes held %v, now %v", before, after)
	}
}

// testHostileSemaphoreJoinWritesNothing makes a semaphore's tickets hash
// a string while its one permit is held: a waiter's joining attempt, which
// samples the tickets before it writes, fails (WRONGTYPE) and must write
// nothing, neither its attempt's mark nor its place in line. Its Client
// hears its tickets already, so it joins at once. Its undo and
// its leave are dropped, so that what the nodes hold after is what the
// attempt left.
func testHostileSemaphoreJoinWritesNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.hostileClient(t, core.WithTTL(time.Minute)).Semaphore(n, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock(ctx)
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Set(ctx, ticketsKey(semKey(n, "")), "x", time.Minute).Err()
	})
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Op != "SemaphoreAcquire" {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithNodeTimeout(time.Second))
	// The Client first hears its tickets, through a waiter of another
	// name: until then a waiter does not join, and its first attempt
	// would write its mark as an attempt that does not join does.
	other := n + "-other"
	if _, err := e.client(t).Semaphore(other, 1).TryAcquire(ctx, 1); err != nil {
		t.Fatal(err)
	}
	octx, ocancel := context.WithCancel(ctx)
	waiting := e.inLine(t, ctx, semKey(other, ":q"), 1, func(context.Context) (*core.Lease, error) { return c.Semaphore(other, 1).Acquire(octx, 1) })
	ocancel()
	<-waiting
	before := e.nameState(t, ctx, n)
	wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if l, err := c.Semaphore(n, 1).Acquire(wctx, 1); !errors.Is(err, core.ErrServerError) {
		if l != nil {
			l.Unlock(ctx)
		}
		t.Fatalf("Acquire over a tickets hash that is a string: got %v, want ErrServerError", err)
	}
	if after := e.nameState(t, ctx, n); !maps.Equal(before, after) {
		t.Fatalf("the refused attempt wrote: the nodes held %v, now %v", before, after)
	}
}

// testHostileTicketsJoinWritesNothing makes the line's tickets hash a
// string while the lock is held: a waiter's joining attempt, which writes
// its ticket there, fails (WRONGTYPE) and must write nothing, the line and
// every expiry included. The waiter's leave is dropped, as it would take
// out of line what the attempt put there.
func testHostileTicketsJoinWritesNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.hostileClient(t).Mutex(n).TryLock)
	defer held.Unlock(ctx)
	foreignTickets(t, ctx, e, n)
	before := e.lineState(t, ctx, n)
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Op == "MutexLeave" {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	}, core.WithTTL(time.Second), core.WithNodeTimeout(500*time.Millisecond))
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := c.Mutex(n).Lock(lctx)
	if err == nil {
		l.Unlock(ctx)
		t.Fatal("Lock joined a line whose tickets hash is a string")
	}
	if !errors.Is(err, core.ErrServerError) {
		t.Fatalf("Lock over a tickets hash that is a string: %v; want ErrServerError", err)
	}
	if after := e.lineState(t, ctx, n); !maps.Equal(before, after) {
		t.Fatalf("the failed join wrote: the nodes held %v, now %v", before, after)
	}
}

// testHostileTicketsLeaveWritesNothing queues a waiter, then makes the
// line's tickets hash a string: the waiter's leave as its Lock gives up,
// which marks its ticket there, fails (WRONGTYPE) and must write nothing:
// its ticket stays in line.
func testHostileTicketsLeaveWritesNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.hostileClient(t).Mutex(n).TryLock)
	defer held.Unlock(ctx)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := e.waiter(t, wctx, e.hostileClient(t, core.WithTTL(time.Second), core.WithNodeTimeout(500*time.Millisecond)).Mutex(n))
	foreignTickets(t, ctx, e, n)
	before := e.lineState(t, ctx, n)
	cancel()
	if r := <-got; r.err == nil {
		r.l.Unlock(ctx)
		t.Fatal("the waiter's Lock returned a lease after its context ended")
	}
	time.Sleep(1500 * time.Millisecond) // the leave's retries, for the waiter's TTL
	if after := e.lineState(t, ctx, n); !maps.Equal(before, after) {
		t.Fatalf("the failed leave wrote: the nodes held %v, now %v", before, after)
	}
}

// testHostileTicketsMultiReleaseWritesNothing hands two names to a queued
// MultiLock waiter, then makes the second name's tickets hash a string:
// the release of the waiter's lease, which marks its ticket on both names,
// fails (WRONGTYPE) and must write nothing on either name.
func testHostileTicketsMultiReleaseWritesNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	names := []string{n + "/a", n + "/b"}
	held := mustLock(t, ctx, e.hostileClient(t).MultiLock(names).TryLock)
	got := e.inLine(t, ctx, queueKey(names[0]), 1, e.hostileClient(t, core.WithTTL(5*time.Second)).MultiLock(names).Lock)
	time.Sleep(50 * time.Millisecond) // its attempt is done
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiting Lock: %v", r.err)
	}
	foreignTickets(t, ctx, e, names[1])
	state := func() map[string]string {
		s := e.lineState(t, ctx, names[0])
		maps.Copy(s, e.lineState(t, ctx, names[1]))
		return s
	}
	before := state()
	uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := r.l.Unlock(uctx); err == nil {
		t.Fatal("Unlock over a tickets hash that is a string: no error")
	}
	if after := state(); !maps.Equal(before, after) {
		t.Fatalf("the failed release wrote: the nodes held %v, now %v", before, after)
	}
}

// foreignTickets makes the tickets hash of the Mutex called n a string on
// every node: another program's key under the name.
func foreignTickets(t *testing.T, ctx context.Context, e env, n string) {
	t.Helper()
	e.everyNode(t, func(c redis.UniversalClient) error {
		return c.Set(ctx, ticketsKey(lockKey(n)), "x", time.Minute).Err()
	})
}

// lineState is nameState with what the line and the tickets hash of the
// Mutex called n hold on each node, where they are a sorted set and a
// hash: a write to them need not change their type or expiry.
func (e env) lineState(t *testing.T, ctx context.Context, n string) map[string]string {
	t.Helper()
	state := e.nameState(t, ctx, n)
	for i := range e.addrs {
		r := e.admin(t, i)
		if members, err := r.ZRangeWithScores(ctx, queueKey(n), 0, -1).Result(); err == nil {
			state[fmt.Sprintf("the line on node %d", i)] = fmt.Sprint(members)
		}
		if fields, err := r.HGetAll(ctx, ticketsKey(lockKey(n))).Result(); err == nil {
			state[fmt.Sprintf("the tickets on node %d", i)] = fmt.Sprint(fields)
		}
	}
	return state
}

// testHostileLineMultiReleaseWritesNothing: the release of a MultiLock
// attempt with tickets of its own that holds the first name on a node and
// not the second (freed meanwhile: force-released, or expired) marks its
// ticket on the second name and hands the first on. Over another program's
// key at the first name's line it fails, and must have written nothing:
// not the second name's mark either.
func testHostileLineMultiReleaseWritesNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	names := []string{n + "/a", n + "/b"}
	r := e.admin(t, 0)
	if err := r.Set(ctx, lockKey(names[0]), "tok1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := r.Set(ctx, queueKey(names[0]), "not a sorted set", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range names {
		keys = append(keys, lockKey(m), fenceKey(m), queueKey(m), ticketsKey(lockKey(m)))
	}
	state := func() map[string]string {
		s := e.lineState(t, ctx, names[0])
		maps.Copy(s, e.lineState(t, ctx, names[1]))
		return s
	}
	before := state()
	_, err := e.h.Open(t, e.addrs[0]).MultiLockRelease(ctx, driver.MultiLockReleaseRequest{Keys: keys, Token: "tok1", Reserve: time.Second, Idle: time.Minute,
		Left: 5 * time.Second, Mark: 1, Tickets: "own1 own2"}) // 1: marksMissed
	if err == nil {
		t.Fatal("a release over a line that is a string: no error")
	}
	if after := state(); !maps.Equal(before, after) {
		t.Fatalf("the failed release wrote: the node held %v, now %v", before, after)
	}
}

// testHostileTicketsAttemptWritesNothing makes the tickets hash of a
// held FairMutex's or RWMutex's line a string (another program's key
// under the name): an attempt that marks its own ticket as it lands (a
// TryLock; an RWMutex's TryRLock too) fails or is refused, and must write
// nothing, as every script that fails does.
func testHostileTicketsAttemptWritesNothing(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	tries := []taker{x.try}
	if p == "RWMutex" {
		tries = append(tries, exclusiveLocks["RWMutexRead"].try)
	}
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		held := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return x.try(ctx, e.hostileClient(t), n) })
		defer held.Unlock(ctx)
		e.everyNode(t, func(c redis.UniversalClient) error {
			return c.Set(ctx, lineTickets(p)(n), "x", time.Minute).Err()
		})
		before := e.nameState(t, ctx, n)
		other := e.hostileClient(t)
		for i, try := range tries {
			if l, err := try(ctx, other, n); err == nil {
				l.Unlock(ctx)
				t.Fatalf("attempt %d acquired a held lock", i)
			}
			if after := e.nameState(t, ctx, n); !maps.Equal(before, after) {
				t.Fatalf("attempt %d, refused, wrote: the nodes held %v, now %v", i, before, after)
			}
		}
	}
}

// testLapsedTicketsDropped leaves three lapsed tickets in the tickets hash
// of primitive p's line (waiters that died): an attempt that marks its
// own ticket as it lands samples four fields before it writes and drops
// those that lapsed, so a name that never goes idle does not keep them.
func testLapsedTicketsDropped(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		stem := lineStem(x.line(n))
		dead := []string{ticketKey(stem, "dead:1"), ticketKey(stem, "dead:2"), ticketKey(stem, "dead:3")}
		e.everyNode(t, func(r redis.UniversalClient) error {
			now, err := r.Time(ctx).Result()
			if err != nil {
				return err
			}
			lapsed := fmt.Sprintf("%d:left", now.Add(-time.Second).UnixMilli())
			if err := r.HSet(ctx, ticketsKey(stem), dead[0], lapsed, dead[1], lapsed, dead[2], lapsed).Err(); err != nil {
				return err
			}
			return r.Expire(ctx, ticketsKey(stem), time.Minute).Err()
		})
		l := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return x.try(ctx, e.hostileClient(t), n) })
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		kept := 0
		for i := range e.addrs {
			left, err := e.admin(t, i).HMGet(ctx, ticketsKey(stem), dead...).Result()
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(left, func(v any) bool { return v != nil }) {
				kept++
			}
		}
		if kept > e.tolerated() {
			t.Fatalf("%d nodes kept lapsed tickets after an attempt and a release; want at most %d", kept, e.tolerated())
		}
	}
}
