package conformance

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// lateJoinBound is how long after a Client knows of a server that joined
// a Cluster (its cluster client's topology refresh) the Client, while it
// has waiters, may take to give it the keyspace flags and listen to it:
// it looks every second.
const lateJoinBound = 5 * time.Second

// testLateReplicaNotifies: a replica that joins a Cluster while a waiter
// waits, and is then promoted when its master dies, is given the flags
// Notify needs and listened to within lateJoinBound of the Client finding
// it, without a new wait to ask for it: a latch's key deleted there by
// hand wakes its waiter at once, not at its recheck (the TTL, 20s). (A
// Mutex waiter listens to no keyspace event; a latch's does.) Another
// waiter leaves while the master is down, and the Client logs no error of
// the driver's own making then (rueidis: "dedicated client should not be
// used after recycled"). A lock's holder extends its lease, which makes
// the Client find the promoted replica.
func testLateReplicaNotifies(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	// Run last: a go-redis pool that failed to dial the dead master tries
	// again every second until closed; let it see its close.
	t.Cleanup(func() { time.Sleep(1100 * time.Millisecond) })
	// A master lists a replica in CLUSTER SLOTS once it acknowledged some
	// of the stream, where an idle master's first bytes are its ping to the
	// replicas (every 10s by default).
	lc := ownServers(t, ctx, e, 1, "--repl-ping-replica-period", "1")
	master := lc.Masters[0]
	log := &lockedBuffer{}
	// No replica acknowledgement: the old replica follows the new master
	// at its own pace, which is not this case's matter.
	c := e.ownClient(t, lc, 20*time.Second, core.WithReplicaAcks(0), core.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the waiter's Client logged:\n%s", log)
		}
	})
	l := mustLock(t, ctx, c.Mutex(n).Lock)
	wait := func(ctx context.Context, name string) <-chan error {
		latch := c.Latch(name)
		if ok, err := latch.TrySetCount(ctx, 1); !ok || err != nil {
			t.Fatalf("TrySetCount(1) of latch %q: (%v, %v), want (true, nil)", name, ok, err)
		}
		got := make(chan error, 1)
		go func() { got <- latch.Wait(ctx) }()
		return got
	}
	got := wait(ctx, n)
	// Another waiter leaves while the master is down.
	other := n + "/other"
	leaving, leave := context.WithCancel(ctx)
	defer leave()
	left := wait(leaving, other)
	key := latchKey(n)
	m := plain(t, master)
	for _, k := range []string{key, latchKey(other)} {
		ch := keyspaceChannel("0", k)
		if !eventually(10*time.Second, func() bool { return m.PubSubNumSub(ctx, ch).Val()[ch] > 0 }) {
			t.Fatal("the waiters did not subscribe their lock's keyspace channel on the master within 10s")
		}
	}
	channel := keyspaceChannel("0", key)

	joined, err := lc.AddReplica(ctx, master)
	if err != nil {
		t.Fatal(err)
	}
	r := plain(t, joined)
	if err := replicated(ctx, m, r); err != nil {
		t.Fatal(err)
	}
	if err := lc.Kill(master); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the Client's listener tries the master again, and fails
	leave()
	if err := <-left; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter that left: %v, want context.Canceled", err)
	}
	if err := r.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER TAKEOVER on the replica that joined: %v", err)
	}
	// The Client meets the dead master and finds the new one (a client
	// learns of the servers at its own topology refresh): the holder
	// extends its lease, as a holder does.
	for promoted := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		err := l.Extend(ctx, 20*time.Second)
		if err == nil {
			break
		}
		if time.Since(promoted) > 10*time.Second { // the client's refresh, not this library's, is slow
			t.Fatalf("the holder's Extend still failed 10s after the promotion: %v", err)
		}
	}
	found := time.Now()
	var flags string
	ready := eventually(lateJoinBound, func() bool {
		flags = r.ConfigGet(ctx, "notify-keyspace-events").Val()["notify-keyspace-events"]
		all := strings.ReplaceAll(flags, "A", "g$lshzxetd")
		return strings.ContainsRune(all, 'K') && strings.ContainsRune(all, 'g') &&
			r.PubSubNumSub(ctx, channel).Val()[channel] > 0
	})
	if !ready {
		t.Fatalf("%v after the Client found it, the promoted replica that joined has notify-keyspace-events %q and %d subscribers of the waiter's channel: want the flags Kgx and the waiter's Client listening",
			lateJoinBound, flags, r.PubSubNumSub(ctx, channel).Val()[channel])
	}
	t.Logf("the promoted replica was configured and listened to %v after the Client found it", time.Since(found).Round(time.Millisecond))
	if err := r.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the latch's Wait after its key was deleted: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("the latch's waiter did not return within 3s of the DEL on the new master: its event did not reach it")
	}
	if strings.Contains(log.String(), "after recycled") {
		t.Errorf("the Client's log holds a use of a recycled connection:\n%s", log)
	}
}
