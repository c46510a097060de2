package conformance

import (
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testForgedGrantIgnored publishes grants for a queued waiter's ticket as
// someone who can see the ticket's name (in the queue, or in keyspace
// events) but cannot read its value could: with a huge fencing token, and
// with a guessed secret; on a Cluster, also on the waiter's sharded
// channel once its Client subscribed it, and for another name's ticket.
// The waiter must ignore them, and hold the lock only when the holder
// released it, with a token above the holder's.
func testForgedGrantIgnored(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	held := mustLock(t, ctx, e.client(t).Mutex(n).Lock)
	queue := queueKey(n)
	got := e.inLine(t, ctx, queue, 1, e.client(t, patient).Mutex(n).Lock)
	for i := range e.addrs {
		admin := e.admin(t, i)
		tickets, err := admin.ZRange(ctx, queue, 0, -1).Result()
		if err != nil || len(tickets) != 1 {
			t.Fatalf("node %d: the queue holds %v (%v), want the waiter's ticket", i, tickets, err)
		}
		ticket := tickets[0]
		stem, id, ok := ticketParts(ticket)
		if !ok {
			t.Fatalf("ticket %q is not of the form ...:t:<client id>:<random>", ticket)
		}
		for _, forged := range []string{ticket + " 999", "999  " + ticket, "999 GUESS " + ticket} {
			if err := admin.Publish(ctx, clientChannel(id), forged).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if !e.cluster {
			continue
		}
		ch := shardChannel(stem, id)
		if !eventually(10*time.Second, func() bool { return admin.SPublish(ctx, ch, "ping").Val() == 1 }) {
			t.Fatal("the waiter's sharded channel was not subscribed within 10s")
		}
		other := ticketKey(lockKey(n+"-other"), id+":XYZ")
		for _, forged := range []string{ticket + " 999", "999  " + ticket, "999 GUESS " + ticket, "999 GUESS " + ticket + " x", "999 " + ticket, "0  " + other, "999 GUESS " + other} {
			if err := admin.SPublish(ctx, ch, forged).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case r := <-got:
		t.Fatalf("a forged grant won the lock while it was held: Lock returned token %d, err %v", token(r.l), r.err)
	case <-time.After(500 * time.Millisecond):
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter after the release: %v", r.err)
		}
		if r.l.Token() <= held.Token() || r.l.Token() == 999 {
			t.Errorf("the waiter's token is %d after the holder's %d: want above it, and not the forged 999", r.l.Token(), held.Token())
		}
		r.l.Unlock(ctx)
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter did not acquire within 5s of the release")
	}
}

func token(l *core.Lease) uint64 {
	if l == nil {
		return 0
	}
	return l.Token()
}
