package conformance

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// aclUser creates an ACL user on every node of the cell, with a password,
// every command and then the rules given, deleted at the end of the test.
func (e env) aclUser(t *testing.T, ctx context.Context, rules ...string) (user, password string) {
	user, password = "redlock-"+rand.Text()[:10], rand.Text()
	args := []any{"ACL", "SETUSER", user, "on", ">" + password, "+@all"}
	for _, r := range rules {
		args = append(args, r)
	}
	for i := range e.addrs {
		admin := e.admin(t, i)
		if err := admin.Do(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { admin.Do(context.Background(), "ACL", "DELUSER", user) })
	}
	return user, password
}

// refusedFor returns what the nodes' ACL LOG holds about user: the keys,
// channels and commands they refused it.
func (e env) refusedFor(t *testing.T, ctx context.Context, user string) []string {
	var refused []string
	for i := range e.addrs {
		entries, err := e.admin(t, i).Do(ctx, "ACL", "LOG", "128").Slice()
		if err != nil {
			t.Fatal(err)
		}
		for _, entry := range entries {
			if s := fmt.Sprint(entry); strings.Contains(s, user) {
				refused = append(refused, fmt.Sprintf("node %d: %s", i, s))
			}
		}
	}
	return refused
}

// testConfinedToPrefix: a Redis user allowed only the keys and channels
// under a prefix (and keyspace events of those keys) uses every primitive
// WithKeyPrefix, each one contended, so that waiters wait, are handed on
// and extend: no server refuses it a key or a channel (its ACL LOG says
// what was refused), and every call succeeds. The Clients' own channels,
// on which releases tell waiters, are under the prefix too.
func testConfinedToPrefix(t *testing.T, e env) {
	ctx := ctxFor(t, 30*time.Second)
	prefix := "tenant-" + strings.ToLower(rand.Text()[:8]) + ":"
	user, password := e.aclUser(t, ctx, "-config", "+config|get",
		"resetkeys", "~"+prefix+"*", "resetchannels", "&"+prefix+"*", "&"+keyspaceChannel("*", prefix+"*"))
	// The default user's Client sets the flags Notify needs (in Ping: New
	// sends nothing), which the tenant may only read.
	if err := e.client(t).Ping(ctx); err != nil {
		t.Fatalf("Ping as the default user: %v", err)
	}
	ds := make([]core.Driver, len(e.addrs))
	for i, a := range e.addrs {
		ds[i] = e.h.OpenAs(t, a, user, password)
	}
	c := e.clientOver(t, ds, core.WithKeyPrefix(prefix), core.WithTTL(10*time.Second), core.WithNodeTimeout(time.Second))
	n := name(t)
	type taker func(context.Context) (*core.Lease, error)
	contend := func(what string, hold, wait taker) {
		held, err := hold(ctx)
		if err != nil {
			t.Fatalf("%s, held: %v", what, err)
		}
		got := make(chan error, 1)
		go func() { got <- takeAndRelease(ctx, wait) }()
		// Let the waiter wait (under Notify, queue and subscribe), then
		// extend and release, handing on.
		time.Sleep(300 * time.Millisecond)
		if err := held.Extend(ctx, 10*time.Second); err != nil {
			t.Errorf("%s, Extend: %v", what, err)
		}
		if ok, err := held.Valid(ctx); !ok || err != nil {
			t.Errorf("%s, Valid: %v, %v", what, ok, err)
		}
		if err := held.Unlock(ctx); err != nil {
			t.Errorf("%s, Unlock: %v", what, err)
		}
		if err := <-got; err != nil {
			t.Errorf("%s, the waiter: %v", what, err)
		}
	}
	m, fm, rw := c.Mutex(n), c.FairMutex(n), c.RWMutex(n)
	contend("Mutex", m.Lock, m.Lock)
	if _, err := m.State(ctx); err != nil {
		t.Errorf("Mutex.State: %v", err)
	}
	contend("FairMutex", fm.Lock, fm.Lock)
	contend("RWMutex", rw.Lock, rw.RLock)
	s := c.Semaphore(n, 1)
	take := func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, 1) }
	contend("Semaphore", take, take)
	if _, err := s.TrySetPermits(ctx, 1); err != nil {
		t.Errorf("Semaphore.TrySetPermits: %v", err)
	}
	if err := s.AddPermits(ctx, 1); err != nil {
		t.Errorf("Semaphore.AddPermits: %v", err)
	}
	if l, _, err := s.DrainPermits(ctx); err != nil {
		t.Errorf("Semaphore.DrainPermits: %v", err)
	} else {
		if _, err := s.TTL(ctx, l.ID()); err != nil {
			t.Errorf("Semaphore.TTL: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock of the drained permits: %v", err)
		}
	}
	ml := c.MultiLock([]string{n, n + "/other"})
	contend("MultiLock", ml.Lock, ml.Lock)
	latch := c.Latch(n)
	if _, err := latch.TrySetCount(ctx, 1); err != nil {
		t.Fatalf("Latch.TrySetCount: %v", err)
	}
	opened := make(chan error, 1)
	go func() { opened <- latch.Wait(ctx) }()
	time.Sleep(300 * time.Millisecond)
	if err := latch.CountDown(ctx); err != nil {
		t.Errorf("Latch.CountDown: %v", err)
	}
	if err := <-opened; err != nil {
		t.Errorf("Latch.Wait: %v", err)
	}
	for _, r := range e.refusedFor(t, ctx, user) {
		t.Errorf("refused to a user confined to %q: %s", prefix, r)
	}
}

// testConfigRefused: under Notify, a Client of a user refused CONFIG (as
// on most managed services) works: New sends nothing; Ping returns nil
// (the start-up check of the README passes) and the Client logs the
// refusal once at warn level, saying what to run; and a Lock that waits
// is handed the lock by the holder's release, by message, long before
// the holder's TTL would let it retry. With WithNotifyConfig(false), for
// a server configured by hand, Ping is quiet too.
func testConfigRefused(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	user, password := e.aclUser(t, ctx, "~*", "&*", "-config")
	log := &lockedBuffer{}
	c, err := core.New([]core.Driver{e.h.OpenAs(t, e.addrs[0], user, password)}, core.WithTTL(time.Minute),
		core.WithLogger(slog.New(slog.NewTextHandler(log, nil))))
	if err != nil {
		t.Fatalf("New as a user without CONFIG: %v; it sends nothing", err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping as a user without CONFIG: %v, want nil: waits work without the events", err)
	}
	hint := `cannot configure keyspace notifications; to have them, run CONFIG SET notify-keyspace-events \"Kgx\" by hand, then pass WithNotifyConfig(false)`
	if got := log.String(); strings.Count(got, "level=WARN") != 1 || !strings.Contains(got, hint) {
		t.Errorf("the Client's log after Ping: %q, want one warning with the hint %q", got, hint)
	}
	held := mustLock(t, ctx, c.Mutex(n).TryLock)
	got := startLock(ctx, c.Mutex(n).Lock)
	time.Sleep(300 * time.Millisecond) // the waiter waits
	handOff(t, ctx, held, got, 10*time.Second)
	byHand, err := core.New([]core.Driver{e.h.OpenAs(t, e.addrs[0], user, password)}, core.WithNotifyConfig(false))
	if err != nil {
		t.Fatalf("New with WithNotifyConfig(false): %v", err)
	}
	defer byHand.Close()
	if err := byHand.Ping(ctx); err != nil {
		t.Fatalf("Ping with WithNotifyConfig(false): %v", err)
	}
}
