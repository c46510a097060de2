package conformance

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
)

// wokenWithin bounds how long after a release a waiter may take to
// acquire. The holders' TTLs (and so the waiters' retry at the holder's
// TTL) are 10s: acquiring within this takes a notification.
const wokenWithin = time.Second

// runNotify checks the Notify machinery of one Client: a release wakes one
// local waiter, Ping configures the server, the listener reconnects. That
// waiters are woken at all is checked in every Notify cell (runMutex).
// Drivers that do not speak RESP3 are covered by NotifyNeedsRESP3.
func runNotify(t *testing.T, h Harness) {
	// The protocol is the driver's configuration: a node of any server of
	// the run tells it, also in a run without the driver's Redis, where
	// the cases below do not run.
	servers := testenv.Servers(t)
	if h.Open(t, servers[0].Nodes[0]).Protocol() != 3 {
		t.Skipf(notApplicable+"%s does not speak RESP3; NotifyNeedsRESP3 covers it", h.Driver)
	}
	redis := cmp.Or(redisServer[h.Driver], "redis7")
	i := slices.IndexFunc(servers, func(s testenv.Server) bool { return s.Name == redis })
	if i < 0 {
		t.Skipf(notApplicable+"%s's Notify cases run on %s, which this run has not", h.Driver, redis)
	}
	nodes := servers[i].Nodes
	t.Run("WakesOneWaiter", func(t *testing.T) {
		testWakesOneWaiter(t, env{h: h, addrs: nodes[:1], strategy: core.Notify})
	})
	t.Run("GrantToLeaverPassesOn", func(t *testing.T) {
		testGrantToLeaverPassesOn(t, env{h: h, addrs: nodes[:1], strategy: core.Notify})
	})
	t.Run("GrantFoundSaysSo", func(t *testing.T) {
		testGrantFoundSaysSo(t, env{h: h, addrs: nodes[:1], strategy: core.Notify})
	})
	t.Run("GrantNamedPastDeadline", func(t *testing.T) {
		testGrantNamedPastDeadline(t, env{h: h, addrs: nodes[:1], strategy: core.Notify})
	})
	t.Run("MarkAfterDeadGrantExpires", func(t *testing.T) {
		testMarkAfterDeadGrantExpires(t, env{h: h, addrs: nodes[:1], strategy: core.Notify})
	})
	t.Run("MultiLockWaitsInLine", func(t *testing.T) {
		testMultiLockWaitsInLine(t, env{h: h, addrs: nodes[:1], strategy: core.Notify})
	})
	// The node the other cases leave alone, as these change its CONFIG and
	// kill its subscription connections.
	spare := nodes[len(nodes)-1]
	t.Run("ConfigMergesFlags", func(t *testing.T) { testConfigMergesFlags(t, h, spare) })
	t.Run("ListenerReconnects", func(t *testing.T) {
		testListenerReconnects(t, env{h: h, addrs: []string{spare}, strategy: core.Notify})
	})
}

// locked is the result of a Lock and when it returned.
type locked struct {
	l   *core.Lease
	err error
	at  time.Time
}

// lockAsync runs m.Lock in a goroutine and sends its result to got.
func lockAsync(ctx context.Context, m *core.Mutex, got chan<- locked) {
	go func() {
		l, err := m.Lock(ctx)
		got <- locked{l, err, time.Now()}
	}()
}

// waiter starts m.Lock in a goroutine and returns once it is in line;
// the result arrives on the channel.
func (e env) waiter(t *testing.T, ctx context.Context, m *core.Mutex) <-chan locked {
	t.Helper()
	got := e.inLine(t, ctx, queueKey(m.Name()), 1, m.Lock)
	time.Sleep(50 * time.Millisecond) // its attempt is done
	return got
}

// awaitMutexWaiter waits until a Mutex waiter of the lock called name
// waits: under Notify until it is in line on every node, under Poll for a
// moment.
func (e env) awaitMutexWaiter(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if e.strategy == core.Notify {
		e.awaitLine(t, ctx, queueKey(name), 1, nil)
		return
	}
	time.Sleep(100 * time.Millisecond)
}

// awaitSubscribed waits until every node has a subscriber to key's
// keyspace channel, that is, a waiter is watching it, then gives the waiter
// time for its first attempt.
func (e env) awaitSubscribed(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	ch := keyspaceChannel("0", key)
	for i := range e.addrs {
		admin := e.admin(t, i)
		for {
			ok, err := subscribed(ctx, admin, ch)
			if err != nil {
				t.Fatalf("PUBSUB NUMSUB on node %d: %v", i, err)
			}
			if ok {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	time.Sleep(50 * time.Millisecond)
}

// expectWoken checks that the waiter acquired within wokenWithin of since.
func expectWoken(t *testing.T, got <-chan locked, since time.Time) *core.Lease {
	t.Helper()
	r := <-got
	if r.err != nil {
		t.Fatalf("waiting Lock: %v", r.err)
	}
	if d := r.at.Sub(since); d > wokenWithin {
		t.Fatalf("the waiter acquired %v after the release, want within %v: it was not woken by a notification", d, wokenWithin)
	}
	return r.l
}

// testDeletedLockTakenByTTL deletes a held lock behind the library's back
// (a holder that someone else cleaned up): no release tells the waiter in
// line, which listens to no keyspace event, so it takes the lock at its
// safety net, the holder's TTL, and not later.
func testDeletedLockTakenByTTL(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = time.Second
	if _, err := e.client(t).Mutex(n, core.WithTTL(ttl)).Lock(ctx); err != nil {
		t.Fatal(err)
	}
	got := e.waiter(t, ctx, e.client(t).Mutex(n))
	start := time.Now()
	for i := range e.addrs {
		if err := e.admin(t, i).Del(ctx, lockKey(n)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("waiting Lock: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	if d := r.at.Sub(start); d > ttl+wokenWithin {
		t.Fatalf("the waiter acquired %v after the lock was deleted, want by the holder's TTL (%v) and %v more", d, ttl, wokenWithin)
	}
}

// untilAllWait returns once the waiters made no attempt for 200ms: all of
// them wait.
func untilAllWait(attempts *atomic.Int64) {
	for seen := int64(-1); seen != attempts.Load(); {
		seen = attempts.Load()
		time.Sleep(200 * time.Millisecond)
	}
}

// testWakesOneWaiter checks that a release wakes one waiter, not all:
// with four waiters in one Client, each release hands the lock to one of
// them with no attempt at all (the release grants it), so none of the
// others was woken to try.
func testWakesOneWaiter(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t).Mutex(n).Lock)
	var attempts atomic.Int64
	c := e.countingClient(t, &attempts)
	const waiters = 4
	got := make(chan locked, waiters)
	for range waiters {
		lockAsync(ctx, c.Mutex(n), got)
	}
	e.awaitLine(t, ctx, queueKey(n), waiters, nil)
	untilAllWait(&attempts)
	for i := range waiters {
		before := attempts.Load()
		start := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		held = expectWoken(t, got, start)
		time.Sleep(100 * time.Millisecond) // time for other waiters to attempt, were they woken
		if n := attempts.Load() - before; n != 0 {
			t.Fatalf("release %d was followed by %d attempts, want none: the release grants the lock to one waiter", i, n)
		}
	}
	held.Unlock(ctx)
}

// testGrantToLeaverPassesOn checks that a waiter that gives up after a
// release granted it the lock passes the lock on to the next waiter, who
// then acquires at once rather than at the grant's TTL. The leaver is
// driven through the driver, so that the grant surely lands before it
// leaves.
func testGrantToLeaverPassesOn(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t).Mutex(n).Lock)
	d := e.h.Open(t, e.addrs[0])
	lock, fence, queue, ticket := lockKey(n), fenceKey(n), queueKey(n), ticketKey(lockKey(n), "leaver:1")
	const token = "leaver"
	r, err := d.MutexAcquire(ctx, driver.MutexAcquireRequest{Lock: lock, Fence: fence, Queue: queue, Tickets: ticketsKey(lock), Ticket: ticket, Token: token, TTL: 30 * time.Second, Join: 1, Arrival: time.Now().UnixMicro(), Secret: "SECRET", Idle: time.Minute, Stem: ""})
	if err != nil || r.Acquired {
		t.Fatalf("the leaver's attempt on a held lock: got %+v, %v; want it queued", r, err)
	}
	got := e.inLine(t, ctx, queue, 2, e.client(t, patient).Mutex(n).Lock) // queued behind the leaver
	start := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := e.admin(t, 0).Get(ctx, lock).Result(); v != token {
		t.Fatalf("after the release the lock holds %q (err %v), want the leaver's token %q: it was granted to the first in line", v, err, token)
	}
	if passed, err := d.MutexLeave(ctx, driver.MutexLeaveRequest{Lock: lock, Fence: fence, Queue: queue, Tickets: ticketsKey(lock), Ticket: ticket, Token: token, Reserve: 200 * time.Millisecond, Idle: time.Minute, Left: 10 * time.Second, Stem: "", Keep: 0}); passed != 1 || err != nil {
		t.Fatalf("MutexLeave of the granted leaver: got %d, %v; want 1 (passed on)", passed, err)
	}
	expectWoken(t, got, start).Unlock(ctx)
}

// testGrantNamedPastDeadline: a hand-on writes nothing to the ticket it
// grants, whose deadline (the lock's expiry when the waiter joined) may
// come long before the grant ends; the ticket names the grant all the
// same until then (see ticketEnd in lib/tickets.lua). The waiter joins
// behind a lock with 300 ms left, is granted the lock for 5 s, and after
// its ticket's deadline an attempt with its next token takes the grant
// over and says it was granted. Read as lapsed, the ticket would name no
// grant, and the attempt would say it took the lock free: a waiter then
// lets such a node go when its attempt fails.
func testGrantNamedPastDeadline(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t, core.WithTTL(time.Second)).Mutex(n).Lock)
	d := e.h.Open(t, e.addrs[0])
	attempt := func(token string) (driver.MutexAcquireReply, error) {
		return d.MutexAcquire(ctx, driver.MutexAcquireRequest{Lock: lockKey(n), Fence: fenceKey(n), Queue: queueKey(n), Tickets: ticketsKey(lockKey(n)),
			Ticket: ticketKey(lockKey(n), "waiter:1"), Token: token, TTL: 5 * time.Second, Join: 1, Arrival: time.Now().UnixMicro(), Secret: "SECRET", Idle: time.Minute, Stem: "w"})
	}
	// Let the lock's expiry, and so the ticket's deadline, come near.
	time.Sleep(700 * time.Millisecond)
	r, err := attempt("w1")
	if err != nil || r.Acquired || r.HolderTTL > 300*time.Millisecond {
		t.Fatalf("the waiter's attempt on the held lock: got %+v, %v; want it queued, the lock with at most 300ms left", r, err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := e.admin(t, 0).Get(ctx, lockKey(n)).Result(); v != "w1" {
		t.Fatalf("after the release the lock holds %q (err %v), want the waiter's token w1", v, err)
	}
	time.Sleep(r.HolderTTL + 200*time.Millisecond) // past the ticket's deadline, well within the grant's 5s
	r, err = attempt("w2")
	if err != nil || !r.Acquired || !r.Granted {
		t.Fatalf("an attempt with the waiter's next token past its ticket's deadline: got %+v, %v; want the grant taken over, granted", r, err)
	}
}

// testMarkAfterDeadGrantExpires: a queued waiter's lease releases (and
// marks its ticket) after its own ticket has lapsed, with one other
// ticket left, of a waiter that died in line: past its deadline, within
// the TTL of the grant it holds (read as live by a mark's sample, see
// ticketEnd in lib/tickets.lua). The hand-on drops that dead ticket and
// the mark's drop the lapsed one: the hash goes, and the mark makes it
// anew. The tickets hash must still expire, so that the idle name leaves
// nothing; a mark that lengthens it with PEXPIRE GT alone leaves it with
// no expiry.
func testMarkAfterDeadGrantExpires(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	d := e.h.Open(t, e.addrs[0])
	stem, a := lockKey(n), e.admin(t, 0)
	t.Cleanup(func() { a.Del(context.Background(), ticketsKey(stem)) }) // which, failing, the case leaves with no expiry
	attempt := func(token, ticket string, ttl time.Duration, join int64) (driver.MutexAcquireReply, error) {
		return d.MutexAcquire(ctx, driver.MutexAcquireRequest{Lock: lockKey(n), Fence: fenceKey(n), Queue: queueKey(n), Tickets: ticketsKey(stem),
			Ticket: ticket, Token: token, TTL: ttl, Join: join, Arrival: time.Now().UnixMicro(), Secret: "SECRET", Idle: time.Minute, Stem: token[:1], Spend: 1 - join})
	}
	if r, err := attempt("h1", ticketKey(stem, "own"), 400*time.Millisecond, 0); err != nil || !r.Acquired {
		t.Fatalf("the holder's attempt: got %+v, %v; want the lock", r, err)
	}
	waiter, dead := ticketKey(stem, "waiter:1"), ticketKey(stem, "dead:1")
	if r, err := attempt("w1", waiter, 300*time.Millisecond, 1); err != nil || r.Acquired {
		t.Fatalf("the waiter's attempt: got %+v, %v; want it queued", r, err)
	}
	// It dies in line: its ticket's deadline is the lock's expiry now, its
	// grant's TTL 10s.
	if r, err := attempt("d1", dead, 10*time.Second, 1); err != nil || r.Acquired {
		t.Fatalf("the dead waiter's attempt: got %+v, %v; want it queued", r, err)
	}
	if v, err := d.ReleaseWake(ctx, driver.ReleaseWakeRequest{Lock: lockKey(n), Fence: fenceKey(n), Queue: queueKey(n), Forced: lockKey(n) + ":forced", Tickets: ticketsKey(stem),
		Token: "h1", Reserve: time.Second, Idle: time.Minute}); err != nil || v != 1 {
		t.Fatalf("the holder's release: got %d, %v; want 1", v, err)
	}
	if v, err := a.Get(ctx, lockKey(n)).Result(); v != "w1" {
		t.Fatalf("after the release the lock holds %q (err %v), want the waiter's token w1", v, err)
	}
	if v, err := d.Extend(ctx, lockKey(n), ticketsKey(stem), lockKey(n)+":forced", "w1", 5*time.Second, waiter); err != nil || v != 1 {
		t.Fatalf("the lease's extension: got %d, %v; want 1", v, err)
	}
	// Past the waiter's ticket and its grant's 300ms, and past the dead
	// waiter's deadline, well within its grant's 10s.
	time.Sleep(time.Second)
	if v, err := d.ReleaseOrMark(ctx, driver.ReleaseOrMarkRequest{Lock: lockKey(n), Fence: fenceKey(n), Queue: queueKey(n), Tickets: ticketsKey(stem), Forced: lockKey(n) + ":forced",
		Token: "w1", Reserve: time.Second, Idle: time.Minute, Left: 300 * time.Millisecond, Always: 1, Ticket: waiter}); err != nil || v != 1 {
		t.Fatalf("the lease's release: got %d, %v; want 1", v, err)
	}
	if ttl := a.PTTL(ctx, ticketsKey(stem)).Val(); ttl < 0 {
		t.Fatalf("after the release that marked the waiter's ticket, the tickets hash has no expiry (PTTL %v): the idle name keeps it", ttl)
	}
	e.gone(t, ctx, 2*time.Second, ticketsKey(stem), queueKey(n), lockKey(n))
}

// testGrantFoundSaysSo: an attempt that finds the lock granted to it (its
// grant's message not heard yet, or made to a token it gave up) says so,
// also the attempt after one that took the grant over with a new token;
// one that takes a free lock does not, nor a copy of it that lands after
// it: a waiter keeps a grant when its attempt fails, and lets a lock it
// took free go. And once that free lock is let go, an attempt with the
// waiter's earlier token, landing late, is refused.
func testGrantFoundSaysSo(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t).Mutex(n).Lock)
	d := e.h.Open(t, e.addrs[0])
	// The waiter's tokens are its stem and a number that grows as it gives
	// one up (see lib/take_over.lua).
	attempt := func(name, token string) (driver.MutexAcquireReply, error) {
		return d.MutexAcquire(ctx, driver.MutexAcquireRequest{Lock: lockKey(name), Fence: fenceKey(name), Queue: queueKey(name), Tickets: ticketsKey(lockKey(name)),
			Ticket: ticketKey(lockKey(name), "waiter:1"), Token: token, TTL: 30 * time.Second, Join: 1, Arrival: time.Now().UnixMicro(), Secret: "SECRET", Idle: time.Minute, Stem: "w"})
	}
	expect := func(what string, r driver.MutexAcquireReply, err error, acquired, granted bool) {
		t.Helper()
		if err != nil || r.Acquired != acquired || r.Granted != granted {
			t.Fatalf("%s: got %+v, %v; want acquired %v, granted %v", what, r, err, acquired, granted)
		}
	}
	r, err := attempt(n, "w1")
	expect("an attempt on a held lock", r, err, false, false)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r, err = attempt(n, "w2")
	expect("an attempt with the next token on the lock the release granted the first", r, err, true, true)
	r, err = attempt(n, "w2")
	expect("the attempt after it", r, err, true, true)

	free := n + "/free"
	admin := e.admin(t, 0)
	if err := admin.Set(ctx, lockKey(free), "someone-else", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	r, err = attempt(free, "w2")
	expect("an attempt on a held lock", r, err, false, false)
	if err := admin.Del(ctx, lockKey(free)).Err(); err != nil { // as when its TTL ends
		t.Fatal(err)
	}
	r, err = attempt(free, "w2")
	expect("an attempt on the lock, free now", r, err, true, false)
	r, err = attempt(free, "w2")
	expect("a copy of it", r, err, true, false)
	if v, err := d.ReleaseWake(ctx, driver.ReleaseWakeRequest{Lock: lockKey(free), Fence: fenceKey(free), Queue: queueKey(free), Tickets: ticketsKey(lockKey(free)),
		Token: "w2", Reserve: 200 * time.Millisecond, Idle: time.Minute}); v != 1 || err != nil {
		t.Fatalf("the undo of the free lock: got %d, %v; want 1 (let go)", v, err)
	}
	r, err = attempt(free, "w1")
	expect("an attempt with the earlier token, landing after the undo", r, err, false, false)
}

// testMultiLockWaitsInLine checks that MultiLock waiters are served in the
// order they queued at the name they wait for, and that a release grants
// the next one the names, so that the releasing Client cannot take them
// back: on one server, all of them, as the waiter wants the same names.
func testMultiLockWaitsInLine(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	names := []string{n + "/a", n + "/b"}
	holder := e.client(t).MultiLock(names)
	held := mustLock(t, ctx, holder.Lock)
	var attempts atomic.Int64
	waiters := e.countingClient(t, &attempts)
	queue := queueKey(names[0])
	var got [2]<-chan locked
	for i := range got {
		got[i] = e.inLine(t, ctx, queue, int64(i+1), waiters.MultiLock(names).Lock)
	}
	untilAllWait(&attempts)
	for i := range got {
		before := attempts.Load()
		start := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := holder.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("TryLock right after release %d: %v, want ErrNotAcquired: the release grants the first name to the waiter first in line", i, err)
		}

		held = expectWoken(t, got[i], start)
		if n := attempts.Load() - before; n != 0 {
			t.Fatalf("waiter %d made %d attempts after release %d, want none: on one server the release grants every name to the waiter for the same names", i, n, i)
		}
		if i == 0 && len(got[1]) > 0 {
			t.Fatal("the second waiter acquired along with the first")
		}
	}
	held.Unlock(ctx)
}

// countingClient is a Client (Notify) on the first node whose acquisition
// attempts, Mutex and MultiLock, add to attempts.
func (e env) countingClient(t *testing.T, attempts *atomic.Int64) *core.Client {
	d := e.h.Open(t, e.addrs[0])
	c, err := core.New([]core.Driver{countingDriver{d, d.(driver.Notifier), attempts}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// countingDriver counts acquisition attempts and keeps the Notifier.
type countingDriver struct {
	driver.Driver
	driver.Notifier
	attempts *atomic.Int64
}

func (d countingDriver) SingleServer() bool {
	s, ok := d.Driver.(driver.SingleServer)
	return ok && s.SingleServer()
}

func (d countingDriver) MultiLockAcquire(ctx context.Context, r driver.MultiLockAcquireRequest) (driver.MultiLockAcquireReply, error) {
	d.attempts.Add(1)
	return d.Driver.MultiLockAcquire(ctx, r)
}

func (d countingDriver) MutexAcquire(ctx context.Context, r driver.MutexAcquireRequest) (driver.MutexAcquireReply, error) {
	d.attempts.Add(1)
	return d.Driver.MutexAcquire(ctx, r)
}

// exclusive holds a lock on addr until the test ends: the spare node's
// cases also run in other drivers' test binaries at the same time.
func exclusive(t *testing.T, h Harness, addr string) {
	ctx := ctxFor(t, 30*time.Second)
	c, err := core.New([]core.Driver{h.Open(t, addr)}, core.WithWaitStrategy(core.Poll), core.WithTTL(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	l := mustLock(t, ctx, c.Mutex("conformance/notify-spare").Lock)
	t.Cleanup(func() { l.Unlock(context.Background()); c.Close() })
}

// testConfigMergesFlags starts from "Ex" and expects the Client (in Ping,
// as at its first wait) to add what Notify needs while keeping E.
func testConfigMergesFlags(t *testing.T, h Harness, addr string) {
	ctx := ctxFor(t, 30*time.Second)
	exclusive(t, h, addr)
	admin := env{addrs: []string{addr}}.admin(t, 0)
	orig, err := admin.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		t.Fatal(err)
	}
	defer admin.ConfigSet(ctx, "notify-keyspace-events", orig["notify-keyspace-events"])
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "Ex").Err(); err != nil {
		t.Fatal(err)
	}
	c, err := core.New([]core.Driver{h.Open(t, addr)})
	if err != nil {
		t.Fatalf("New with the Notify strategy: %v", err)
	}
	err = c.Ping(ctx)
	c.Close()
	if err != nil {
		t.Fatalf("Ping: %v", err)
	}
	flags := admin.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
	for _, f := range "EKgx" {
		if !strings.ContainsRune(flags, f) {
			t.Errorf(`notify-keyspace-events is %q after Ping over "Ex": %q is missing`, flags, f)
		}
	}
}

// testListenerReconnects kills the subscription connection under a
// waiter: the Listener must reconnect and resubscribe by itself.
func testListenerReconnects(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	exclusive(t, e.h, e.addrs[0])
	held := mustLock(t, ctx, e.client(t).Mutex(n).Lock)
	got := e.waiter(t, ctx, e.client(t).Mutex(n))
	admin := e.admin(t, 0)
	tickets, err := admin.ZRange(ctx, queueKey(n), 0, -1).Result()
	if err != nil || len(tickets) != 1 {
		t.Fatalf("the queue holds %v (%v), want the waiter's ticket", tickets, err)
	}
	_, id, ok := ticketParts(tickets[0])
	if !ok {
		t.Fatalf("ticket %q is not of the form ...:t:<client id>:<random>", tickets[0])
	}
	if err := admin.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	// The waiter's Client hears the release on its own channel.
	for {
		if ok, err := subscribed(ctx, admin, clientChannel(id)); err != nil {
			t.Fatal(err)
		} else if ok {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatal("the Listener did not subscribe the Client's channel again")
		case <-time.After(5 * time.Millisecond):
		}
	}
	start := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	expectWoken(t, got, start).Unlock(ctx)
}
