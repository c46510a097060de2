package conformance

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testEavesdropperCannotForge: a Redis user who may only subscribe and
// publish on the library's channels, and read no key of it, listens to a
// queued waiter's hand-offs: it subscribes the waiter Client's own
// channel and the waiter's sharded channel (which a release on a
// standalone server does not use: the waiter's secret there says so), sends
// wake-ups of its own, and sends the grant it read again with fencing
// tokens of its choice. The grant it reads holds no secret of the
// ticket's, only their MAC (lib/hmac.lua, checked here against Go's
// HMAC-SHA1); its wake-ups cost the waiter no attempt; and the waiter's
// lease carries the token the release drew, above the holder's, never one
// the eavesdropper chose.
func testEavesdropperCannotForge(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	// The holder's TTL bounds the waiter's safety net: it attempts by
	// then when no hand-off reaches it.
	held := mustLock(t, ctx, e.client(t, core.WithTTL(4*time.Second)).Mutex(n).Lock)
	spy := &scriptSpy{}
	queue := queueKey(n)
	got := e.inLine(t, ctx, queue, 1, e.spyClient(t, spy, patient).Mutex(n).Lock)
	eves := e.eavesdroppers(t, ctx)
	heard := make([]<-chan *redis.Message, len(e.addrs))
	var ticket, id string
	for i, eve := range eves {
		tickets, err := e.admin(t, i).ZRange(ctx, queue, 0, -1).Result()
		if err != nil || len(tickets) != 1 {
			t.Fatalf("node %d: the queue holds %v (%v), want the waiter's ticket", i, tickets, err)
		}
		stem, cid, ok := ticketParts(tickets[0])
		if !ok {
			t.Fatalf("ticket %q is not of the form ...:t:<client id>:<random>", tickets[0])
		}
		ticket, id = tickets[0], cid
		// Its own channel, where the waiter's Client hears hand-offs, is
		// one PUBSUB CHANNELS lists.
		if chs, err := eve.PubSubChannels(ctx, clientChannel("*")).Result(); err != nil || !slices.Contains(chs, clientChannel(id)) {
			t.Fatalf("node %d: PUBSUB CHANNELS as the eavesdropper: %v (%v), want %s", i, chs, err, clientChannel(id))
		}
		classic, sharded := eve.Subscribe(ctx, clientChannel(id)), eve.SSubscribe(ctx, shardChannel(stem, id))
		for _, sub := range []*redis.PubSub{classic, sharded} {
			t.Cleanup(func() { sub.Close() })
			if _, err := sub.Receive(ctx); err != nil {
				t.Fatalf("node %d: subscribing as the eavesdropper: %v", i, err)
			}
		}
		heard[i] = merge(classic.Channel(), sharded.Channel())
	}
	quiet(t, spy) // the waiter's own calls as it joins are done
	if calls := forgeWakeUps(t, ctx, eves, spy, id, ticket); calls > 0 {
		t.Errorf("20 forged wake-ups per node made the waiter send %d script calls, want none", calls)
	}
	// The secrets the release finds: read now, as the grants may reach
	// the waiter, whose next attempt (when they do not agree) stores new ones.
	secrets := make([]string, len(e.addrs))
	for i := range e.addrs {
		secrets[i] = grantSecret(t, ctx, e.admin(t, i), ticket)
	}

	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Every node's grant is read first: once the eavesdropper sends one
	// on, the waiter may attempt, which stores new secrets.
	var fence uint64
	grants := make([]string, len(e.addrs))
	hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	heardFrom := 0
	for i := range e.addrs {
		if grants[i] = grantHeard(heard[i], hctx.Done()); grants[i] != "" {
			heardFrom++
		}
	}
	// The waiter hears the grants too: once a majority's agree it holds,
	// and leaves the line of a node whose release has not run yet, which
	// then grants no one.
	if heardFrom < len(grants)/2+1 {
		t.Fatalf("the eavesdropper heard grants from %d of %d nodes within 5s of the release, want a majority: %q", heardFrom, len(grants), grants)
	}
	for i := range e.addrs {
		if grants[i] == "" {
			continue
		}
		told, mac, named := splitHandOff(t, grants[i])
		if named != ticket {
			t.Fatalf("node %d: the hand-off %q names ticket %s, want the waiter's %s", i, grants[i], named, ticket)
		}
		// The waiter's attempt, made when the first grants it heard did
		// not agree, may store a new secret before this node's release.
		secret := secrets[i]
		value, _ := e.admin(t, i).Get(ctx, ticket).Result()
		if f := strings.Split(value, ":"); len(f) == 4 && mac == hmacHex(f[3], strconv.FormatUint(told, 10)+" "+named) {
			secret = f[3]
		}
		if strings.Contains(grants[i], secret) {
			t.Errorf("node %d: the hand-off %q carries the ticket's secret", i, grants[i])
		} else if want := hmacHex(secret, strconv.FormatUint(told, 10)+" "+named); mac != want {
			t.Errorf("node %d: the hand-off %q carries MAC %s, want HMAC-SHA1 of %q by the ticket's secret, %s", i, grants[i], mac, fmt.Sprint(told)+" "+named, want)
		}
		fence = max(fence, told)
	}
	// The grants again, as they were and with tokens of the
	// eavesdropper's.
	for i, grant := range grants {
		if grant == "" {
			continue
		}
		_, mac, named := splitHandOff(t, grant)
		for _, forged := range []string{"1 " + mac + " " + named, "4611686018427387904 " + mac + " " + named, grant} {
			if err := eves[i].Publish(ctx, clientChannel(id), forged).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("the waiter after the release: %v", r.err)
		}
		defer r.l.Unlock(ctx)
		// On one node, the token the release drew; on a quorum, where
		// the nodes' counters may differ, one above the holder's.
		if r.l.Token() <= held.Token() || r.l.Token() > fence || len(e.addrs) == 1 && r.l.Token() != fence {
			t.Errorf("the waiter's token is %d after the holder's %d, want the %d the release drew, not one the eavesdropper chose", r.l.Token(), held.Token(), fence)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not acquire within 10s of the release")
	}
}

// grantHeard returns the first grant heard, skipping wake-ups and the
// eavesdropper's own messages, which come back to it; "" when none came
// before done (once done, it takes what was heard already).
func grantHeard(heard <-chan *redis.Message, done <-chan struct{}) string {
	grant := func(m *redis.Message) bool {
		return !strings.HasPrefix(m.Payload, "0 ") && !strings.Contains(m.Payload, " "+forgedMAC+" ")
	}
	for {
		select {
		case m := <-heard:
			if grant(m) {
				return m.Payload
			}
		case <-done:
			for {
				select {
				case m := <-heard:
					if grant(m) {
						return m.Payload
					}
				default:
					return ""
				}
			}
		}
	}
}

// splitHandOff reads a hand-off message, "<fence> <mac> <ticket>".
func splitHandOff(t *testing.T, message string) (fence uint64, mac, ticket string) {
	t.Helper()
	parts := strings.Split(message, " ")
	f, err := strconv.ParseUint(parts[0], 10, 64)
	if len(parts) != 3 || err != nil || f == 0 {
		t.Fatalf("the hand-off %q is not a grant \"<fence> <mac> <ticket>\"", message)
	}
	return f, parts[1], parts[2]
}

// grantSecret reads, as an administrator, the secret that a plain Lock's
// ticket holds ("g:<ttl>:<token>:<secret>", see lib/hand_on.lua).
func grantSecret(t *testing.T, ctx context.Context, admin redis.UniversalClient, ticket string) string {
	t.Helper()
	stem, _, _ := ticketParts(ticket)
	value, _, err := ticketIn(ctx, admin, stem, ticket)
	fields := strings.Split(value, ":")
	if err != nil || len(fields) != 4 || fields[0] != "g" || fields[3] == "" {
		t.Fatalf("ticket %s holds %q (%v), want g:<ttl>:<token>:<secret>", ticket, value, err)
	}
	return fields[3]
}

func hmacHex(key, message string) string {
	h := hmac.New(sha1.New, []byte(key))
	h.Write([]byte(message))
	return hex.EncodeToString(h.Sum(nil))
}

// merge returns one channel with the messages of both, which ends with
// them; it drops what finds it full, so its senders never block.
func merge(a, b <-chan *redis.Message) <-chan *redis.Message {
	out := make(chan *redis.Message, 256)
	pass := func(in <-chan *redis.Message) {
		for m := range in {
			select {
			case out <- m:
			default:
			}
		}
	}
	go pass(a)
	go pass(b)
	return out
}

// testForgedWakesIgnored: a user who may only publish on the library's
// channels sends wake-ups to a waiter of p in line: without a MAC, with a
// made-up one, and as a grant. The waiter sends no script call for them;
// the holder's release then wakes it at once (its wake-up or grant carries
// the MAC the waiter checks), long before its safety net at the holder's
// TTL.
func testForgedWakesIgnored(p string) func(*testing.T, env) {
	x := exclusiveLocks[p]
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 30*time.Second), name(t)
		hold := x.lock
		if x.holder != nil {
			hold = x.holder
		}
		held, err := hold(ctx, e.client(t, core.WithTTL(15*time.Second)), n)
		if err != nil {
			t.Fatalf("the holder: %v", err)
		}
		spy := &scriptSpy{}
		// A long TTL: a waiter in a FairMutex's, RWMutex's or Semaphore's
		// line refreshes its place every quarter of its TTL.
		waiter := e.spyClient(t, spy, patient, core.WithTTL(time.Minute))
		admin := e.admin(t, 0)
		before, err := admin.ZRange(ctx, x.line(n), 0, -1).Result() // a fair lock's holder stays in line
		if err != nil {
			t.Fatal(err)
		}
		got := e.inLine(t, ctx, x.line(n), int64(len(before))+1, func(ctx context.Context) (*core.Lease, error) { return x.lock(ctx, waiter, n) })
		eves := e.eavesdroppers(t, ctx)
		members, err := admin.ZRange(ctx, x.line(n), 0, -1).Result()
		if err != nil || len(members) != len(before)+1 {
			t.Fatalf("the line holds %v (%v), want %v and the waiter", members, err, before)
		}
		ticket := members[len(members)-1]
		if !strings.Contains(ticket, ticketInfix) { // a line of tokens: the ticket is under the line's stem
			ticket = ticketKey(lineStem(x.line(n)), ticket)
		}
		_, id, ok := ticketParts(ticket)
		if !ok {
			t.Fatalf("ticket %q is not of the form ...:t:<client id>:<random>", ticket)
		}
		quiet(t, spy) // the waiter's own calls as it joins are done
		if calls := forgeWakeUps(t, ctx, eves, spy, id, ticket); calls > 0 {
			t.Errorf("30 forged messages per node made the waiter send %d script calls, want none", calls)
		}
		// Its safety net is the holder's 15s TTL: within 5s, the release's
		// wake-up was heard.
		took := handOff(t, ctx, held, got, 5*time.Second)
		t.Logf("held %v after the release", took.Round(time.Millisecond))
	}
}

// eavesdropped reports whether the cell runs the cases of a user with
// rights on channels only: under Notify, where hand-offs travel by
// message; on real servers (miniredis has no ACL); not on a Cluster, where
// the Client's own channel is no one node's.
func (e env) eavesdropped() bool {
	return e.strategy == core.Notify && !e.cluster && e.server != "miniredis"
}

// eavesdroppers connects to each node as a new ACL user who may only
// subscribe and publish on the library's channels, and read no key.
func (e env) eavesdroppers(t *testing.T, ctx context.Context) []*redis.Client {
	user, password := e.aclUser(t, ctx, "-@all", "+ping", "+hello", "+auth",
		"+pubsub|channels", "+subscribe", "+ssubscribe", "+publish", "resetkeys", "resetchannels", "&"+keyPrefix+"*")
	eves := make([]*redis.Client, len(e.addrs))
	for i, addr := range e.addrs {
		eves[i] = redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: password})
		t.Cleanup(func() { eves[i].Close() })
		if err := eves[i].Get(ctx, lockKey("x")).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Fatalf("node %d: the eavesdropper read a key (%v): its user must have none", i, err)
		}
	}
	return eves
}

// quiet returns once the Client that spy watches sent no script call for
// half a second: a waiter that joined its line (on a loaded machine its
// subscription and second attempt may take a while) waits now.
func quiet(t *testing.T, spy *scriptSpy) {
	t.Helper()
	for range 20 {
		before := spy.calls.Load()
		time.Sleep(500 * time.Millisecond)
		if spy.calls.Load() == before {
			return
		}
	}
	t.Fatalf("the waiter sent script calls for 10s after it joined its line; the last: %v", spy.last())
}

// forgedMAC is a MAC made up: of the right length, by no secret.
var forgedMAC = strings.Repeat("ab", 20)

// forgeWakeUps sends, ten times on every node, wake-ups for ticket on
// the channel of the Client called id: without a MAC, with a made-up one,
// and a grant with a made-up one; it returns how many script calls the
// waiter's Client sent meanwhile (spy).
func forgeWakeUps(t *testing.T, ctx context.Context, eves []*redis.Client, spy *scriptSpy, id, ticket string) int64 {
	t.Helper()
	before := spy.calls.Load()
	for range 10 {
		for _, eve := range eves {
			for _, forged := range []string{"0  " + ticket, "0 " + forgedMAC + " " + ticket, "7 " + forgedMAC + " " + ticket} {
				if err := eve.Publish(ctx, clientChannel(id), forged).Err(); err != nil {
					t.Fatal(err)
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	return spy.calls.Load() - before
}
