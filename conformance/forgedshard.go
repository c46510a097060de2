package conformance

import (
	"strings"
	"testing"
	"time"
)

// testForgedShardGrantIgnored is ForgedGrantIgnored on the waiter's
// sharded channel (SPUBLISH), once its Client subscribed it.
func testForgedShardGrantIgnored(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held, err := e.client(t).Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queue := lockKey(n) + ":q"
	got := e.inLine(t, ctx, queue, 1, e.client(t).Mutex(n).Lock)
	admin := e.admin(t, 0)
	tickets, err := admin.ZRange(ctx, queue, 0, -1).Result()
	if err != nil || len(tickets) != 1 {
		t.Fatalf("queue %v (%v)", tickets, err)
	}
	ticket := tickets[0]
	at := strings.LastIndex(ticket, ":t:")
	id, _, _ := strings.Cut(ticket[at+len(":t:"):], ":")
	ch := ticket[:at] + ":c:" + id
	if !eventually(10*time.Second, func() bool { return admin.SPublish(ctx, ch, "ping").Val() == 1 }) {
		t.Fatal("the sharded channel was not subscribed within 10s")
	}
	other := "redlock:{" + n + "-other}:t:" + id + ":XYZ"
	for _, forged := range []string{ticket + " 999", "999  " + ticket, "999 GUESS " + ticket, "999 GUESS " + ticket + " x", "999 " + ticket, "0  " + other, "999 GUESS " + other} {
		if err := admin.SPublish(ctx, ch, forged).Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-got:
		t.Fatalf("a forged sharded grant won the lock while it was held: token %d, err %v", token(r.l), r.err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.l.Token() <= held.Token() || r.l.Token() == 999 {
			t.Errorf("token %d after %d", r.l.Token(), held.Token())
		}
		r.l.Unlock(ctx)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not acquire within 5s of the release")
	}
}
