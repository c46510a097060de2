package conformance

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
)

// testSemaphorePassedOverKeepsPlace: a Semaphore waiter A, first in line,
// loses its subscription connection on every node (CLIENT KILL) and cannot
// open another until its user is let in again. The holder's release
// passes A over, as nobody hears it, and wakes B, behind it, which takes
// the permit. Then C comes and waits, and only then A's Client subscribes
// again, and A attempts. A came before C: when B lets go, A must be
// served before C, as a passed-over Mutex waiter is (its place is its
// arrival). A passed-over waiter keeps its ticket and joins again; it
// must join at its place, not at the back.
func testSemaphorePassedOverKeepsPlace(t *testing.T, e env) {
	ctx, n := ctxFor(t, 60*time.Second), name(t)
	line := semKey(n, ":q")
	held, err := e.client(t, core.WithTTL(redialHolderTTL)).Semaphore(n, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	user, password := e.aclUser(t, ctx, "allkeys", "allchannels")
	ds := make([]core.Driver, len(e.addrs))
	for i, a := range e.addrs {
		ds[i] = e.h.OpenAs(t, a, user, password)
	}
	acquire := func(c *core.Client) func(context.Context) (*core.Lease, error) {
		return func(ctx context.Context) (*core.Lease, error) { return c.Semaphore(n, 1).Acquire(ctx, 1) }
	}
	gotA := e.inLine(t, ctx, line, 1, acquire(e.clientOver(t, ds, core.WithTTL(time.Minute))))
	e.subscribed(t, ctx, user)
	time.Sleep(100 * time.Millisecond)
	gotB := e.inLine(t, ctx, line, 2, acquire(e.client(t, core.WithTTL(time.Minute))))
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Do(ctx, "ACL", "SETUSER", user, "off").Err() // its connections stay
	})
	e.killSubscriber(t, ctx, user)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var b *core.Lease
	select {
	case r := <-gotB:
		if r.err != nil {
			t.Fatalf("B: %v", r.err)
		}
		b = r.l
	case r := <-gotA:
		t.Fatalf("A, deaf, returned (%v) first", r.err)
	case <-time.After(5 * time.Second):
		t.Fatal("B, behind A whom nobody hears, did not take the permit within 5s of the release")
	}
	gotC := e.inLine(t, ctx, line, 1, acquire(e.client(t, core.WithTTL(time.Minute))))
	e.everyNode(t, func(r redis.UniversalClient) error {
		return r.Do(ctx, "ACL", "SETUSER", user, "on").Err()
	})
	e.subscribed(t, ctx, user)
	// A attempts once its Client subscribed again, and joins the line.
	e.awaitLine(t, ctx, line, 2, gotA)
	if err := b.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-gotA:
		if r.err != nil {
			t.Fatalf("A: %v", r.err)
		}
		r.l.Unlock(ctx)
	case r := <-gotC:
		if r.l != nil {
			r.l.Unlock(ctx)
		}
		t.Fatalf("C, which came after A, was served first (%v): A, passed over while its subscription was down, joined again at the back of the line", r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("neither A nor C took the permit within 20s of B's release")
	}
}

// testSemaphoreRejoinKeepsGivenPlace: a waiter A, first in line, is
// passed over (out of line, its ticket kept), then attempts of its land
// claiming the earliest place there is, and a later one: each puts it
// back at the place its first join gave it, ahead of C, who came after
// it, and no further ahead. An attempt cannot move a waiter in line.
func testSemaphoreRejoinKeepsGivenPlace(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	line := semKey(n, ":q")
	held, err := e.client(t, patient, core.WithTTL(time.Minute)).Semaphore(n, 1).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Where the permit is free, a waiter takes it there rather than join.
	e.slotsOnEveryNode(t, ctx, n, held.ID())
	acquire := func(ctx context.Context) (*core.Lease, error) {
		return e.client(t, patient, core.WithTTL(time.Minute)).Semaphore(n, 1).Acquire(ctx, 1)
	}
	e.inLine(t, ctx, line, 1, acquire)
	e.inLine(t, ctx, line, 2, acquire)
	ds := e.drivers(t, e.addrs)
	for i := range e.addrs {
		admin := e.admin(t, i)
		first, err := admin.ZRangeWithScores(ctx, line, 0, 0).Result()
		if err != nil || len(first) != 1 {
			t.Fatalf("the line on node %d: %v %v", i, first, err)
		}
		a, given := first[0].Member.(string), first[0].Score
		for _, claim := range []int64{1, time.Now().Add(time.Hour).UnixMicro()} {
			if err := admin.ZRem(ctx, line, a).Err(); err != nil { // as a release passing it over does
				t.Fatal(err)
			}
			token := rand.Text()
			r, err := ds[i].SemaphoreAcquire(ctx, driver.SemaphoreAcquireRequest{Permits: semKey(n, ""), Holders: semKey(n, ":holders"),
				Size: semKey(n, ":size"), Fence: semKey(n, ":fence"), Queue: line, Tickets: ticketsKey(semKey(n, "")),
				Mark: ticketKey(semKey(n, ""), "a:"+token), Token: token, N: 1, TTL: time.Minute, DefaultSize: 1,
				Join: 1, Place: claim, Wait: time.Minute, Idle: time.Minute, Secret: "solo" + token, Ticket: a})
			if err != nil || r.Status != 0 {
				t.Fatalf("node %d: the attempt of the waiter passed over: (%+v, %v), want it refused", i, r, err)
			}
			ranked, err := admin.ZRangeWithScores(ctx, line, 0, -1).Result()
			if err != nil {
				t.Fatal(err)
			}
			if len(ranked) != 2 || ranked[0].Member != a || ranked[0].Score != given {
				t.Fatalf("node %d: an attempt claiming place %d put the line at %v; want %s first, at the place %.0f its first join gave it", i, claim, ranked, a, given)
			}
		}
	}
}
