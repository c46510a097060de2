package conformance

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// redialHolderTTL is the holder's TTL in the cases of a waiter whose
// subscription dropped: its safety net, far beyond what they wait.
const redialHolderTTL = 30 * time.Second

// redialed reports whether the cell runs the cases of a waiter whose
// subscription connection drops: under Notify; on real servers (miniredis
// has no ACL, nor CLIENT KILL USER), with a driver that can log in as a
// user; not on a Cluster, whose nodes CLIENT KILL would have to go through
// one by one.
func (e env) redialed() bool {
	return e.strategy == core.Notify && !e.cluster && e.server != "miniredis" && e.h.OpenAs != nil
}

// testReconnectingWaiterServed: a waiter of p in line, whose Client logs
// in as a user of its own, loses its subscription connection on every
// node (CLIENT KILL), and cannot open another until its user is let in
// again; the holder releases meanwhile, which tells nobody (on one server
// it passes the deaf waiter over and frees the lock). Once the Client
// subscribed again, its waiter attempts and holds within wokenWithin, not
// at its safety net, the holder's 30s TTL.
func testReconnectingWaiterServed(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		held, got, user := e.redialWaiter(t, ctx, x, n)
		e.everyNode(t, func(r redis.UniversalClient) error {
			return r.Do(ctx, "ACL", "SETUSER", user, "off").Err() // its connections stay
		})
		e.killSubscriber(t, ctx, user)
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		e.everyNode(t, func(r redis.UniversalClient) error {
			return r.Do(ctx, "ACL", "SETUSER", user, "on").Err()
		})
		e.expectServedOnceSubscribed(t, ctx, user, got)
	}
}

// redialWaiter has a Client logged in as a new user put a waiter of x in
// line behind a holder of the lock called n, and returns the holder, the
// waiter's result and the user.
func (e env) redialWaiter(t *testing.T, ctx context.Context, x exclusiveLock, n string) (*core.Lease, <-chan locked, string) {
	t.Helper()
	held, waiter, user := e.heldAndWaiterAs(t, ctx, x, n, "allchannels")
	before, err := e.admin(t, 0).ZCard(ctx, x.line(n)).Result() // a fair lock's holder stays in line
	if err != nil {
		t.Fatal(err)
	}
	got := e.inLine(t, ctx, x.line(n), before+1, func(ctx context.Context) (*core.Lease, error) { return x.lock(ctx, waiter, n) })
	// A waiter in a line kept in Redis is in it after its first attempt,
	// before its Client subscribed and it attempted again.
	e.subscribed(t, ctx, user)
	time.Sleep(100 * time.Millisecond)
	return held, got, user
}

// heldAndWaiterAs takes the lock of x called n with a Client of its own,
// and returns its lease, a Client logged in on every node as a new user
// with the given channel rights (and every key), and the user.
func (e env) heldAndWaiterAs(t *testing.T, ctx context.Context, x exclusiveLock, n, channels string) (*core.Lease, *core.Client, string) {
	t.Helper()
	hold := x.lock
	if x.holder != nil {
		hold = x.holder
	}
	held, err := hold(ctx, e.client(t, core.WithTTL(redialHolderTTL)), n)
	if err != nil {
		t.Fatalf("the holder: %v", err)
	}
	user, password := e.aclUser(t, ctx, "allkeys", channels)
	ds := make([]core.Driver, len(e.addrs))
	for i, a := range e.addrs {
		ds[i] = e.h.OpenAs(t, a, user, password)
	}
	// A long TTL: a waiter in a FairMutex's or Semaphore's line refreshes
	// its place every quarter of its TTL.
	return held, e.clientOver(t, ds, core.WithTTL(time.Minute)), user
}

// expectServedOnceSubscribed fails t unless the waiter whose result got
// carries is served within wokenWithin of user's Client subscribing again.
func (e env) expectServedOnceSubscribed(t *testing.T, ctx context.Context, user string, got <-chan locked) {
	t.Helper()
	back, r := e.subscribedOrDone(t, ctx, user, got)
	if r != nil {
		served := make(chan locked, 1)
		served <- *r
		got = served
	}
	expectServed(t, ctx, got, back)
}

// expectWaitReturned fails t unless the Latch waiter whose result got
// carries returns, without an error, within wokenWithin of user's Client
// subscribing (again).
func (e env) expectWaitReturned(t *testing.T, ctx context.Context, user string, got <-chan locked) {
	t.Helper()
	back, r := e.subscribedOrDone(t, ctx, user, got)
	if r == nil {
		select {
		case got := <-got:
			r = &got
		case <-time.After(3 * time.Second):
			t.Fatal("Wait did not return within 3s of its Client subscribing, the latch open meanwhile")
		}
	}
	if r.err != nil {
		t.Fatalf("Wait: %v", r.err)
	}
	if d := r.at.Sub(back); d > wokenWithin {
		t.Fatalf("Wait returned %v after its Client subscribed, want within %v", d.Round(time.Millisecond), wokenWithin)
	}
}

// killSubscriber closes, on every node, the subscription connections of
// user's, and fails t unless there was one on each.
func (e env) killSubscriber(t *testing.T, ctx context.Context, user string) {
	t.Helper()
	for i := range e.addrs {
		killed, err := e.admin(t, i).Do(ctx, "CLIENT", "KILL", "USER", user, "TYPE", "pubsub").Int()
		if err != nil || killed == 0 {
			t.Fatalf("node %d: CLIENT KILL USER %s TYPE pubsub: %d (%v), want the waiter's Client's subscription connection", i, user, killed, err)
		}
	}
}

// subscribed returns when user subscribed channels on every node,
// failing t after 5s.
func (e env) subscribed(t *testing.T, ctx context.Context, user string) time.Time {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.subscribers(t, ctx, user) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the waiter's Client did not subscribe within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Now()
}

// subscribers is the least, over the nodes, of user's connections that
// hold a subscription (CLIENT LIST: sub > 0).
func (e env) subscribers(t *testing.T, ctx context.Context, user string) int {
	t.Helper()
	least := -1
	for i := range e.addrs {
		list, err := e.admin(t, i).ClientList(ctx).Result()
		if err != nil {
			t.Fatalf("node %d: CLIENT LIST: %v", i, err)
		}
		count := 0
		for line := range strings.Lines(list) {
			var mine, subscribed bool
			for _, f := range strings.Fields(line) {
				k, v, _ := strings.Cut(f, "=")
				switch k {
				case "user":
					mine = v == user
				case "sub":
					s, _ := strconv.Atoi(v)
					subscribed = s > 0
				}
			}
			if mine && subscribed {
				count++
			}
		}
		if least < 0 || count < least {
			least = count
		}
	}
	return least
}

// expectServed expects the waiter to hold within wokenWithin of since,
// and releases it; it fails t after 3s.
func expectServed(t *testing.T, ctx context.Context, got <-chan locked, since time.Time) {
	t.Helper()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter: %v", r.err)
		}
		defer r.l.Unlock(ctx)
		if d := r.at.Sub(since); d > wokenWithin {
			t.Fatalf("the waiter held %v after its Client subscribed again, want within %v", d.Round(time.Millisecond), wokenWithin)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("the waiter did not hold within 3s of its Client subscribing again (its safety net is the holder's %v TTL)", redialHolderTTL)
	}
}

// testEavesdropperCannotDeafen: a user who may only publish on the
// library's channels floods a queued waiter's Client channel with
// messages larger than the servers let a subscriber fall behind by
// (client-output-buffer-limit pubsub, lowered on servers of the case's
// own), so that every server closes the Client's subscription connection
// again and again; the holder releases during the flood, which tells
// nobody. Once the flood ends, the waiter holds within wokenWithin, not at
// its safety net, the holder's 30s TTL; and the forged grants sent among
// the flood gave it nothing: its token is one a release drew.
func testEavesdropperCannotDeafen(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	own := e
	own.addrs = ownNodes(t, ctx, e, len(e.addrs))
	const limit = 16 << 10
	own.everyNode(t, func(r redis.UniversalClient) error {
		return r.ConfigSet(ctx, "client-output-buffer-limit", "pubsub "+strconv.Itoa(limit)+" 0 0").Err()
	})
	held := mustLock(t, ctx, own.client(t, core.WithTTL(redialHolderTTL)).Mutex(n).Lock)
	spy := &scriptSpy{}
	got := own.waiter(t, ctx, own.spyClient(t, spy, own.cellOptions()...).Mutex(n))
	tickets, err := own.admin(t, 0).ZRange(ctx, queueKey(n), 0, -1).Result()
	if err != nil || len(tickets) != 1 {
		t.Fatalf("the queue holds %v (%v), want the waiter's ticket", tickets, err)
	}
	ticket := tickets[0]
	_, id, ok := ticketParts(ticket)
	if !ok {
		t.Fatalf("ticket %q is not of the form ...:t:<client id>:<random>", ticket)
	}
	subscribers := func(i int) []string { // the ids of node i's connections that subscribe
		list, err := own.admin(t, i).ClientList(ctx).Result()
		if err != nil {
			t.Fatalf("node %d: CLIENT LIST: %v", i, err)
		}
		var ids []string
		for line := range strings.Lines(list) {
			if f := strings.Fields(line); len(f) > 0 && slices.Contains(f, "flags=P") {
				ids = append(ids, f[0])
			}
		}
		return ids
	}
	before := make([][]string, len(own.addrs))
	for i := range own.addrs {
		if before[i] = subscribers(i); len(before[i]) == 0 {
			t.Fatalf("node %d: the waiter's Client has no subscription connection", i)
		}
	}

	eves := own.eavesdroppers(t, ctx)
	calls := spy.calls.Load()
	flood, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	big := "7 " + forgedMAC + " " + ticket + " " + strings.Repeat("x", 2*limit)
	for _, eve := range eves {
		wg.Go(func() {
			for flood.Err() == nil {
				p := eve.Pipeline()
				for range 8 {
					p.Publish(flood, clientChannel(id), big)
				}
				for _, forged := range []string{"1 " + forgedMAC + " " + ticket, "4611686018427387904 " + forgedMAC + " " + ticket} {
					p.Publish(flood, clientChannel(id), forged)
				}
				p.Exec(flood)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()
	time.Sleep(100 * time.Millisecond)
	for i := range own.addrs {
		if now := subscribers(i); slices.Equal(now, before[i]) {
			t.Fatalf("node %d: the flood left the waiter's subscription connection %v open; the server must close it", i, now)
		}
	}
	// Every time its Client subscribes again, the waiter attempts, but
	// not more often than every 100ms: the flood makes the servers close
	// the connection much more often.
	time.Sleep(200 * time.Millisecond)
	if calls = spy.calls.Load() - calls; calls > int64(5*len(own.addrs)) {
		t.Errorf("the waiter sent %d script calls in 300ms of flood, want at most an attempt per 100ms and one more (%d)", calls, 5*len(own.addrs))
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	stop()
	wg.Wait()
	ended := time.Now()
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter: %v", r.err)
		}
		defer r.l.Unlock(ctx)
		if d := r.at.Sub(ended); d > wokenWithin {
			t.Fatalf("the waiter held %v after the flood ended, want within %v", d.Round(time.Millisecond), wokenWithin)
		}
		if r.l.Token() <= held.Token() || r.l.Token() >= 4611686018427387904 {
			t.Errorf("the waiter's token is %d after the holder's %d, want one a release drew, not one the eavesdropper sent", r.l.Token(), held.Token())
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("the waiter did not hold within 3s of the flood's end (its safety net is the holder's %v TTL)", redialHolderTTL)
	}
}

// testReconnectingHolderChecks: a Mutex lease with a 30s TTL, whose Done
// is read, is held by a Client logged in as a user of its own; its
// subscription connection is closed on every node (CLIENT KILL), and
// cannot come back until its user is let in again; meanwhile the lock key
// is deleted behind the library's back, an event nobody hears. Once the
// Client subscribed again, the lease checks itself on the servers: Done
// closes within 2s of the user's return, Err is ErrLost.
func testReconnectingHolderChecks(t *testing.T, e env) { testReconnectingHolderChecksOf("Mutex")(t, e) }

// testReconnectingHolderChecksOf is testReconnectingHolderChecks for a
// lease of p's: one that holds its lock key alone.
func testReconnectingHolderChecksOf(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) { x.reconnectingHolderChecks(t, e) }
}

func (x exclusiveLock) reconnectingHolderChecks(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	user, password := e.aclUser(t, ctx, "allkeys", "allchannels")
	ds := make([]core.Driver, len(e.addrs))
	for i, a := range e.addrs {
		ds[i] = e.h.OpenAs(t, a, user, password)
	}
	l, err := x.lock(ctx, e.clientOver(t, ds, core.WithTTL(redialHolderTTL)), n)
	if err != nil {
		t.Fatal(err)
	}
	done := l.Done()
	e.listening(t, ctx, x.key(n))
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Do(ctx, "ACL", "SETUSER", user, "off").Err() // its connections stay
	})
	e.killSubscriber(t, ctx, user)
	e.everyNode(t, func(r redis.UniversalClient) error { return r.Del(ctx, x.key(n)).Err() })
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Do(ctx, "ACL", "SETUSER", user, "on").Err()
	})
	// Its check, once it subscribed again, ends its subscription: it is
	// not waited for here, only Done, within the reconnection's time and
	// a second.
	select {
	case <-done:
		if err := l.Err(); !errors.Is(err, core.ErrLost) {
			t.Fatalf("Err after Done closed: %v, want ErrLost", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("Done still open 2s after the Client's user was let in again, its lock key deleted meanwhile on every node (Err %v); the lease claims %v more", l.Err(), time.Until(l.Until()).Round(time.Second))
	}
}

// testReconnectingLatchWaiter: a Latch waiter, whose Client logs in as a
// user of its own, loses its subscription connection on every node
// (CLIENT KILL) and cannot open another until its user is let in again;
// the latch opens meanwhile (CountDown to 0), which tells nobody. Once the
// Client subscribed again, Wait returns within wokenWithin, not at its
// retry.
func testReconnectingLatchWaiter(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	if ok, err := e.latchClient(t).Latch(n).TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount(1) on a new latch: got (%v, %v), want true", ok, err)
	}
	user, password := e.aclUser(t, ctx, "allkeys", "allchannels")
	ds := make([]core.Driver, len(e.addrs))
	for i, a := range e.addrs {
		ds[i] = e.h.OpenAs(t, a, user, password)
	}
	l := e.clientOver(t, ds, core.WithTTL(time.Minute), core.WithNodeTimeout(time.Second)).Latch(n)
	got := make(chan locked, 1)
	go func() {
		err := l.Wait(ctx)
		got <- locked{err: err, at: time.Now()}
	}()
	e.subscribed(t, ctx, user)
	time.Sleep(200 * time.Millisecond) // it waits
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Do(ctx, "ACL", "SETUSER", user, "off").Err() // its connections stay
	})
	e.killSubscriber(t, ctx, user)
	if err := e.latchClient(t).Latch(n).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Do(ctx, "ACL", "SETUSER", user, "on").Err()
	})
	e.expectWaitReturned(t, ctx, user, got)
}

// subscribedOrDone is subscribed, but returns too when got tells of a
// waiter that returned first (it may unsubscribe before it is seen
// subscribed), with what it told.
func (e env) subscribedOrDone(t *testing.T, ctx context.Context, user string, got <-chan locked) (time.Time, *locked) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for e.subscribers(t, ctx, user) == 0 {
		select {
		case r := <-got:
			return r.at, &r
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the waiter's Client did not subscribe within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Now(), nil
}

// testLateSubscriptionWaiterServed: a Client logged in as a user of its
// own, which may not subscribe yet, puts a waiter of p in line: its first
// subscription is refused on every node, and the driver keeps its
// channels for its next connection. The holder releases meanwhile, which
// tells nobody. Then the user is allowed the channels and its connections
// are closed (CLIENT KILL): once the Client subscribed on the new ones,
// the waiter attempts and holds within wokenWithin, not at its safety
// net, the holder's 30s TTL. A subscription that comes back on a new
// connection is one, whether or not the server confirmed one before.
func testLateSubscriptionWaiterServed(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		held, waiter, user := e.heldAndWaiterAs(t, ctx, x, n, "resetchannels")
		got := startLock(ctx, func(ctx context.Context) (*core.Lease, error) { return x.lock(ctx, waiter, n) })
		time.Sleep(subscriptionRefused) // it waits, its subscription refused
		select {
		case r := <-got:
			t.Fatalf("the waiter returned (%v) while the lock was held", r.err)
		default:
		}
		if s := e.subscribers(t, ctx, user); s != 0 {
			t.Fatalf("the waiter's Client subscribed on %d connections while its user was refused", s)
		}
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		e.allowAndReconnect(t, ctx, user)
		e.expectServedOnceSubscribed(t, ctx, user, got)
	}
}

// testLateSubscriptionLatchWaiter is testLateSubscriptionWaiterServed for
// a Latch waiter: its Client's first subscription is refused, the latch
// opens meanwhile, and Wait returns within wokenWithin of the Client
// subscribing on new connections.
func testLateSubscriptionLatchWaiter(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	if ok, err := e.latchClient(t).Latch(n).TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount(1) on a new latch: got (%v, %v), want true", ok, err)
	}
	user, password := e.aclUser(t, ctx, "allkeys", "resetchannels")
	ds := make([]core.Driver, len(e.addrs))
	for i, a := range e.addrs {
		ds[i] = e.h.OpenAs(t, a, user, password)
	}
	l := e.clientOver(t, ds, core.WithTTL(time.Minute), core.WithNodeTimeout(time.Second)).Latch(n)
	got := make(chan locked, 1)
	go func() {
		err := l.Wait(ctx)
		got <- locked{err: err, at: time.Now()}
	}()
	time.Sleep(subscriptionRefused) // it waits, its subscription refused
	select {
	case r := <-got:
		t.Fatalf("Wait returned (%v) while the latch was closed", r.err)
	default:
	}
	if err := e.latchClient(t).Latch(n).CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	e.allowAndReconnect(t, ctx, user)
	e.expectWaitReturned(t, ctx, user, got)
}

// subscriptionRefused is how long the Late cases leave a waiter whose
// subscription is refused: a SUBSCRIBE the server refuses is waited for
// until the node timeout (at least a second), then the waiter attempts
// again, and must be waiting before the release.
const subscriptionRefused = 2 * time.Second

// allowAndReconnect allows user every channel, then closes its
// connections on every node (CLIENT KILL USER), failing t unless there
// was one on each: the Client subscribes what it was refused on its new
// ones.
func (e env) allowAndReconnect(t *testing.T, ctx context.Context, user string) {
	t.Helper()
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Do(ctx, "ACL", "SETUSER", user, "allchannels").Err()
	})
	for i := range e.addrs {
		killed, err := e.admin(t, i).Do(ctx, "CLIENT", "KILL", "USER", user).Int()
		if err != nil || killed == 0 {
			t.Fatalf("node %d: CLIENT KILL USER %s: %d (%v), want the waiter's Client's connections", i, user, killed, err)
		}
	}
}
