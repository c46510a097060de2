package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// The hostile cases put into Redis what the library would never write
// there (queue members naming other keys, malformed tickets, entries
// without their lapse time, backlogs of dead entries) and check that the
// scripts skip and drop it, never fail on it and never do unbounded work
// for it in one call. They run on every topology, the cluster included:
// everything they write shares the primitive's hash tag.

// hostile returns the hostile cases of primitive p that apply to e.
func hostile(e env, p string) map[string]func(*testing.T, env) {
	cases := map[string]map[string]func(*testing.T, env){
		"Mutex": {
			"HostileForeignQueueMember": testHostileForeignMember,
			"HostileMalformedQueue":     testHostileMalformedQueue,
			"HostileDeadTicketBacklog":  testHostileDeadTickets,
		},
		"Semaphore": {
			"HostileForeignQueueMember":   testHostileSemaphoreForeign,
			"HostileDeadTicketBacklog":    testHostileSemaphoreDeadTickets,
			"HostileExpiredBacklog":       testHostileSemaphoreExpired,
			"HostileLimits":               testHostileSemaphoreLimits,
			"HostileLargePermits":         testHostileSemaphoreLarge,
			"HostileHoldersList":          testHostileSemaphoreHoldersList,
			"HostilePermitsWritesNothing": testHostileSemaphoreSlotsWritesNothing(""),
			"HostileHoldersWritesNothing": testHostileSemaphoreSlotsWritesNothing(":holders"),
			"HostileSizeWritesNothing":    testHostileSemaphoreSizeWritesNothing,
		},
		"FairMutex": {
			"HostileEntryWithoutLapse": testHostileFairGhost,
			"HostileMalformedTicket":   testHostileFairMalformed,
			"HostileLapsedBacklog":     testHostileFairBacklog,
		},
		"RWMutex": {
			"HostileReaderBacklog":   testHostileRWReaderBacklog,
			"HostileWaitingReaders":  testHostileRWWaitingReaders,
			"HostileMalformedTicket": testHostileRWMalformed,
		},
		"Latch": {
			"HostileCountLimits":         testHostileLatchLimits,
			"HostileServerErrorReported": testHostileServerError,
		},
		"MultiLock": {},
	}[p]
	maps.Copy(cases, fenceCases(e, p))
	if p == "Mutex" && e.strategy == core.Poll { // no one waits
		cases["HostileForcedMarker"] = testHostileForcedMarker
	}
	if p == "Mutex" && e.strategy == core.Notify { // only Notify waiters queue
		cases["HostileGiveUpDropsTicket"] = testHostileGiveUpDropsTicket
		cases["HostileTicketsJoinWritesNothing"] = testHostileTicketsJoinWritesNothing
		cases["HostileTicketsLeaveWritesNothing"] = testHostileTicketsLeaveWritesNothing
	}
	if (p == "Mutex" || p == "Semaphore") && e.strategy == core.Notify { // only Notify waiters queue
		cases["HostileQueueReleaseWritesNothing"] = testHostileReleaseWritesNothing(p, exclusiveLocks[p].line)
		cases["HostileTicketsReleaseWritesNothing"] = testHostileReleaseWritesNothing(p, lineTickets(p))
	}
	if p == "FairMutex" || p == "RWMutex" { // their waiters queue under either strategy
		cases["HostileTicketsReleaseWritesNothing"] = testHostileReleaseWritesNothing(p, lineTickets(p))
		cases["HostileTicketsAttemptWritesNothing"] = testHostileTicketsAttemptWritesNothing(p)
	}
	if p == "Semaphore" && e.strategy == core.Notify { // only Notify waiters join
		cases["HostileTicketsJoinWritesNothing"] = testHostileSemaphoreJoinWritesNothing
	}
	return cases
}

// everyNode runs f with the admin client of every node.
func (e env) everyNode(t testing.TB, f func(r redis.UniversalClient) error) {
	t.Helper()
	for i := range e.addrs {
		if err := f(e.admin(t, i)); err != nil {
			t.Fatalf("node %d: %v", i, err)
		}
	}
}

// seed adds count members to the sorted set key on every node: member(i)
// with score(i), in batches.
func (e env) seed(t testing.TB, ctx context.Context, key string, count int, score func(int) float64, member func(int) string) {
	t.Helper()
	e.everyNode(t, func(r redis.UniversalClient) error {
		for from := 0; from < count; from += 1000 {
			zs := make([]redis.Z, 0, 1000)
			for i := from; i < min(from+1000, count); i++ {
				zs = append(zs, redis.Z{Score: score(i), Member: member(i)})
			}
			if err := r.ZAdd(ctx, key, zs...).Err(); err != nil {
				return err
			}
		}
		return r.Expire(ctx, key, time.Minute).Err()
	})
}

// card is the size of the sorted set key on node 0.
func (e env) card(t testing.TB, ctx context.Context, key string) int64 {
	t.Helper()
	n, err := e.admin(t, 0).ZCard(ctx, key).Result()
	if err != nil {
		t.Fatalf("ZCARD %s: %v", key, err)
	}
	return n
}

// unpurged is how many nodes still hold entries in the sorted set key
// once at most a tolerated minority do, or two seconds on, and how many entries they hold. A call purges where it
// runs, but a round returns once a majority answered, and a straggler's
// call that lands after its lease's release is refused by the release's
// mark before it purges (see drains): a tolerated minority of nodes may
// keep them.
func (e env) unpurged(t testing.TB, ctx context.Context, key string) (nodes int, entries int64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		nodes, entries = 0, 0
		for i := range e.addrs {
			n, err := e.admin(t, i).ZCard(ctx, key).Result()
			if err != nil {
				t.Fatalf("ZCARD %s on node %d: %v", key, i, err)
			}
			if n > 0 {
				nodes, entries = nodes+1, entries+n
			}
		}
		if nodes <= e.tolerated() || time.Now().After(deadline) {
			return nodes, entries
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// drains runs op until the sorted set key is empty on every node,
// checking that the first run left some of its count entries on each (so
// the purge is bounded) and that every run made the entries of all nodes
// together fewer. (A run may purge nothing on one node: one whose
// acquisition came after the release, which the release's mark refused.)
func (e env) drains(t *testing.T, ctx context.Context, key string, count int, op func() error) {
	t.Helper()
	total := func() int64 {
		var sum int64
		for i := range e.addrs {
			n, err := e.admin(t, i).ZCard(ctx, key).Result()
			if err != nil {
				t.Fatalf("ZCARD %s on node %d: %v", key, i, err)
			}
			sum += n
		}
		return sum
	}
	prev := int64(count * len(e.addrs))
	for round := 0; ; round++ {
		if err := op(); err != nil {
			t.Fatalf("round %d with %d entries left: %v", round, prev, err)
		}
		left := total()
		for deadline := time.Now().Add(2 * time.Second); left >= prev && time.Now().Before(deadline); left = total() {
			time.Sleep(10 * time.Millisecond) // a release returns once a majority answered
		}
		switch {
		case round == 0 && e.card(t, ctx, key) == 0:
			t.Fatalf("one call purged all %d entries of %s: the work of one call is not bounded", count, key)
		case left == 0:
			return
		case left >= prev:
			t.Fatalf("round %d: %s still has %d entries on its nodes (was %d): the backlog does not shrink", round, key, left, prev)
		}
		prev = left
	}
}

// testHostileForeignMember queues, in lock A's line, the ticket of a
// waiter of another lock B (B shares A's hash tag through another key
// prefix, so this works on a cluster too). A release of A must not hand A
// to B's waiter: it drops the member and frees A, and B is untouched. An
// owner's lock hands on under either strategy.
func testHostileForeignMember(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.hostileClient(t)
	l := mustLock(t, ctx, c.Mutex(n, core.WithOwner("a")).TryLock)
	lb := mustLock(t, ctx, e.hostileClient(t, core.WithKeyPrefix("hostile:")).Mutex(n).TryLock)
	foreign := reprefixed("hostile:", ticketKey(lockKey(n), "zz:victim"))
	e.everyNode(t, func(r redis.UniversalClient) error {
		if err := putTicket(ctx, r, reprefixed("hostile:", lockKey(n)), foreign, "g:30000:VICTIM:SECRET", 30*time.Second); err != nil {
			return err
		}
		return r.ZAdd(ctx, queueKey(n), redis.Z{Score: 0, Member: foreign}).Err()
	})
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with a foreign ticket in line: %v", err)
	}
	if _, err := c.Mutex(n, core.WithOwner("b")).TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the release: %v (the release handed the lock to the foreign ticket?)", err)
	}
	if nodes, left := e.unpurged(t, ctx, queueKey(n)); nodes > e.tolerated() {
		t.Errorf("the foreign member is still in line on %d nodes (%d members)", nodes, left)
	}
	if err := lb.Extend(ctx, 10*time.Second); err != nil {
		t.Errorf("B's holder lost B: %v", err)
	}
}

// testHostileMalformedQueue fills a line with members a script cannot use
// as they are: the queue key itself (no ticket id), tickets whose grants
// have a zero or an overflowing TTL, and a ticket without a deadline.
// Every release must skip and drop them, and free the lock.
func testHostileMalformedQueue(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	m := e.hostileClient(t).Mutex(n, core.WithOwner("a"))
	q, tk := queueKey(n), ticketKey(lockKey(n), "zz:")
	e.everyNode(t, func(r redis.UniversalClient) error {
		putTicket(ctx, r, lockKey(n), tk+"zero", "g:0:x:", time.Minute)
		putTicket(ctx, r, lockKey(n), tk+"huge", "g:99999999999999999999:x:", time.Minute)
		putTicket(ctx, r, lockKey(n), tk+"multi", "m:ab:0:x", time.Minute)
		r.HSet(ctx, ticketsKey(lockKey(n)), tk+"raw", "g:30000:x:y")
		return r.ZAdd(ctx, q, redis.Z{Score: 0, Member: q}, redis.Z{Score: 1, Member: tk + "zero"},
			redis.Z{Score: 2, Member: tk + "huge"}, redis.Z{Score: 3, Member: tk + "multi"}, redis.Z{Score: 4, Member: tk + "raw"}).Err()
	})
	l := mustLock(t, ctx, m.TryLock)
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("Unlock with malformed members in line: %v", err)
	}
	if _, err := e.hostileClient(t).Mutex(n, core.WithOwner("b")).TryLock(ctx); err != nil {
		t.Fatalf("TryLock after the release: %v", err)
	}
	if nodes, left := e.unpurged(t, ctx, q); nodes > e.tolerated() {
		t.Errorf("%d malformed members are still in line on %d nodes", left, nodes)
	}
}

// testHostileDeadTickets has a line of dead tickets (no field holds them): a
// release purges a bounded number of them and still frees the lock, and
// the backlog shrinks with every release.
func testHostileDeadTickets(t *testing.T, e env) {
	ctx, n := ctxFor(t, 2*time.Minute), name(t)
	m, q, count := e.hostileClient(t).Mutex(n, core.WithOwner("a")), queueKey(n), e.ops(10000)
	e.seed(t, ctx, q, count, func(i int) float64 { return float64(i) }, func(i int) string { return ticketKey(lockKey(n), "zz:"+strconv.Itoa(i)) })
	e.drains(t, ctx, q, count, func() error { return takeAndRelease(ctx, m.TryLock) })
}

// testHostileGiveUpDropsTicket has a waiter give up: it leaves its place
// in line, and of its ticket only the mark that refuses its late attempts
// (lib/left.lua), which lapses with the waiter's TTL. (The holder's
// TryLock, with the same TTL, leaves such a mark too.)
func testHostileGiveUpDropsTicket(t *testing.T, e env) {
	ctx, n, ttl := ctxFor(t, 10*time.Second), name(t), 5*time.Second
	if _, err := e.hostileClient(t).Mutex(n, core.WithTTL(ttl)).TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.hostileClient(t).Mutex(n, core.WithTTL(ttl)).Lock(wctx)
		done <- err
	}()
	for e.card(t, ctx, queueKey(n)) == 0 {
		if ctx.Err() != nil {
			t.Fatal("the waiter never queued")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lock: got %v, want context.Canceled", err)
	}
	e.expectCard(t, ctx, queueKey(n), 0, "after the waiter gave up")
	for i := range e.addrs {
		r := e.admin(t, i)
		now, err := r.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		fields, err := r.HGetAll(ctx, ticketsKey(lockKey(n))).Result()
		if err != nil {
			t.Fatal(err)
		}
		for k, field := range fields {
			deadline, v, _ := strings.Cut(field, ":")
			ms, _ := strconv.ParseInt(deadline, 10, 64)
			if left := time.Duration(ms-now.UnixMilli()) * time.Millisecond; v != "left" || left <= 0 || left > ttl {
				t.Errorf("node %d: the waiter that gave up left its ticket %s holding %q for %v, want only the mark \"left\" for at most %v", i, k, v, left, ttl)
			}
		}
	}
}

// testHostileLatchLimits checks that counts a script cannot hold exactly
// (above 2^53, a Lua number's exact range) are refused, and that the
// largest one works.
func testHostileLatchLimits(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	l := e.hostileClient(t).Latch(n)
	for _, bad := range []int64{core.MaxLatchCount + 1, 1<<63 - 1} {
		if ok, err := l.TrySetCount(ctx, bad); !errors.Is(err, core.ErrInvalid) || ok {
			t.Errorf("TrySetCount(%d): got (%v, %v), want ErrInvalid", bad, ok, err)
		}
	}
	if ks := e.keysUnder(t, ctx, 0, lockKey(n)); len(ks) != 0 {
		t.Fatalf("refused counts wrote keys: %v", ks)
	}
	if ok, err := l.TrySetCount(ctx, core.MaxLatchCount); err != nil || !ok {
		t.Fatalf("TrySetCount(MaxLatchCount): (%v, %v)", ok, err)
	}
	if c, err := l.Count(ctx); err != nil || c != core.MaxLatchCount {
		t.Fatalf("Count: (%d, %v), want %d", c, err, int64(core.MaxLatchCount))
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	if c, err := l.Count(ctx); err != nil || c != core.MaxLatchCount-1 {
		t.Fatalf("Count after CountDown: (%d, %v), want %d", c, err, int64(core.MaxLatchCount-1))
	}
}

// testHostileServerError makes every node fail a script with an error
// reply (the latch key holds a string): the error says so, and is not
// ErrNoQuorum, which means nodes did not answer.
func testHostileServerError(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	e.everyNode(t, func(r redis.UniversalClient) error { return r.Set(ctx, latchKey(n), "x", time.Minute).Err() })
	_, err := e.hostileClient(t).Latch(n).Count(ctx)
	switch {
	case err == nil:
		t.Fatal("Count over a string key: no error")
	case errors.Is(err, core.ErrNoQuorum):
		t.Fatalf("Count over a string key: %v; the servers answered, this is not ErrNoQuorum", err)
	case !errors.Is(err, core.ErrServerError) || !strings.Contains(err.Error(), "WRONGTYPE"):
		t.Fatalf("Count over a string key: %v; want ErrServerError with the server's message", err)
	}
}

// far is a lapse time that stays ahead for the length of a case.
func far() float64 { return float64(time.Now().Add(time.Hour).UnixMilli()) }

func member(prefix string) func(int) string {
	return func(i int) string { return prefix + fmt.Sprint(i) }
}

// hostileClient is the cell's client with a node timeout of 2s: a call
// facing a backlog does bounded but sizeable work (a hundred entries
// purged), which miniredis, compiling every script afresh, takes hundreds
// of milliseconds for under -race. The bound is what these cases check,
// not the latency.
func (e env) hostileClient(t testing.TB, opts ...core.Option) *core.Client {
	return e.client(t, append([]core.Option{core.WithNodeTimeout(2 * time.Second)}, opts...)...)
}
