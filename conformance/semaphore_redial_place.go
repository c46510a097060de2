package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
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
