package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testWakesWithoutEvents: on servers of the case's own that publish no
// keyspace events, under Notify, Clients of a user refused CONFIG (as on
// most managed services; on a Cluster, Clients that leave the flags
// alone): a reader waiting for a writer holds within wokenWithin of the
// writer's Unlock, and a Latch.Wait returns within wokenWithin of the
// last CountDown, though their own retries come a quarter TTL and a TTL
// (a minute) later. Only the library's message can wake them that soon.
func testWakesWithoutEvents(t *testing.T, e env) {
	ctx, n := ctxFor(t, 90*time.Second), name(t)
	x := e.eventless(t, ctx, 1, n)
	holder, waiter, admin := x.client(), x.client(), x.admins[0]
	if err := waiter.Ping(ctx); err != nil {
		t.Fatalf("Ping: got %v, want nil: a refused CONFIG is only logged", err)
	}
	x.noEvents(t, ctx, "before the waits")

	// A reader waits for a writer.
	w := mustLock(t, ctx, holder.RWMutex(n).Lock)
	got := startLock(ctx, waiter.RWMutex(n).RLock)
	// The reader registered, then subscribed and attempted once more.
	for admin.ZCard(ctx, rwKey(n, ":rq")).Val() == 0 && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond)
	unlocked := time.Now()
	if err := w.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiting RLock: %v", r.err)
	}
	t.Logf("the reader held %v after the writer's Unlock", r.at.Sub(unlocked).Round(time.Millisecond))
	if d := r.at.Sub(unlocked); d > wokenWithin {
		t.Errorf("the reader held %v after the writer's Unlock, want within %v: no message woke it", d.Round(time.Millisecond), wokenWithin)
	}
	r.l.Unlock(ctx)

	// A Latch waiter waits for the last count-down.
	latch := holder.Latch(n)
	if ok, err := latch.TrySetCount(ctx, 1); err != nil || !ok {
		t.Fatalf("TrySetCount(1): got (%v, %v), want true", ok, err)
	}
	opened := make(chan time.Time, 1)
	waited := make(chan error, 1)
	go func() {
		err := waiter.Latch(n).Wait(ctx)
		opened <- time.Now()
		waited <- err
	}()
	// The waiter has read the latch shut and listens once the Wait's
	// first recheck of it ran; a count-down before then is seen by that.
	time.Sleep(300 * time.Millisecond)
	countedDown := time.Now()
	if err := latch.CountDown(ctx); err != nil {
		t.Fatal(err)
	}
	at := <-opened
	if err := <-waited; err != nil {
		t.Fatalf("Latch.Wait: %v", err)
	}
	t.Logf("Latch.Wait returned %v after the last CountDown", at.Sub(countedDown).Round(time.Millisecond))
	if d := at.Sub(countedDown); d > wokenWithin {
		t.Errorf("Latch.Wait returned %v after the last CountDown, want within %v: no message woke it", d.Round(time.Millisecond), wokenWithin)
	}
	x.noEvents(t, ctx, "after the waits")
}

// eventless are servers of a case's own that publish no keyspace events,
// and Clients that leave them so, under Notify: those of a user refused
// CONFIG (as on most managed services), on nodes servers, or, on a
// Cluster, a Cluster of its own whose Clients leave the flags alone
// (WithNotifyConfig(false)), as one node.
type eventless struct {
	servers []string                // every server, whose flags stay off
	admins  []redis.UniversalClient // by node, as env.admin
	client  func(opts ...core.Option) *core.Client
}

// eventless starts the servers, with ACL users named after name.
func (e env) eventless(t *testing.T, ctx context.Context, nodes int, name string) eventless {
	t.Helper()
	if e.cluster {
		lc := ownServers(t, ctx, e, 3)
		return eventless{servers: allNodes(lc), admins: []redis.UniversalClient{plainCluster(t, lc.Masters)},
			client: func(opts ...core.Option) *core.Client {
				return e.ownClient(t, lc, time.Minute, append([]core.Option{core.WithNotifyConfig(false)}, opts...)...)
			}}
	}
	var x eventless
	x.servers = ownNodes(t, ctx, e, nodes)
	user, password := "redlock-"+name[:8], "wakes-"+name[:8]
	for _, addr := range x.servers {
		admin := plain(t, addr)
		if err := admin.Do(ctx, "ACL", "SETUSER", user, "on", ">"+password, "+@all", "~*", "&*", "-config").Err(); err != nil {
			t.Fatal(err)
		}
		x.admins = append(x.admins, admin)
	}
	x.client = func(opts ...core.Option) *core.Client {
		ds := make([]core.Driver, len(x.servers))
		for i, addr := range x.servers {
			ds[i] = e.h.OpenAs(t, addr, user, password)
		}
		return e.clientOver(t, ds, append([]core.Option{core.WithTTL(time.Minute), unhurried}, opts...)...)
	}
	return x
}

// noEvents fails the case when a server has keyspace events on.
func (x eventless) noEvents(t *testing.T, ctx context.Context, when string) {
	t.Helper()
	for _, a := range x.servers {
		if flags := plain(t, a).ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]; flags != "" {
			t.Fatalf("%s, server %s has notify-keyspace-events %q: want none", when, a, flags)
		}
	}
}
