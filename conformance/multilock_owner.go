package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// An owner's MultiLock waiter (WithOwner) queues under Notify at the name
// its attempt stopped at, as an owner's Mutex waiter does: a release
// reserves that name for it and tells it by message, and its next
// attempt takes the names one by one, the reserved one included. In the
// cases below the holder has the second name, so that the waiter takes
// the first, stops at the second and waits in its line.

// testMultiOwnerWokenWithoutEvents: on servers of the case's own that
// publish no keyspace events, whose Clients may not change that (a user
// refused CONFIG; on a Cluster, WithNotifyConfig(false)), an owner's
// MultiLock waiter holds within wokenWithin of the holder's Unlock,
// though the holder's TTL, its own retry, is 30s. Only the release's
// message can wake it that soon.
func testMultiOwnerWokenWithoutEvents(t *testing.T, e env) {
	ctx, n := ctxFor(t, 90*time.Second), name(t)
	nodes := len(e.addrs)
	if e.cluster {
		nodes = 1
	}
	x := e.eventless(t, ctx, nodes, n)
	x.noEvents(t, ctx, "before the wait")
	names := []string{n + "/a", n + "/b"}
	held := mustLock(t, ctx, x.client().Mutex(names[1], core.WithOwner("holder"), core.WithTTL(30*time.Second)).Lock)
	got := startLock(ctx, x.client().MultiLock(names, core.WithOwner("waiter")).Lock)
	for i, admin := range x.admins {
		for admin.ZCard(ctx, queueKey(names[1])).Val() == 0 {
			select {
			case r := <-got:
				t.Fatalf("the waiter's Lock returned (%v) before it queued on node %d", r.err, i)
			case <-ctx.Done():
				t.Fatalf("the waiter is not in line on node %d", i)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	time.Sleep(300 * time.Millisecond) // its attempt is done: it waits
	unlocked := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiting MultiLock: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	t.Logf("the waiter held %v after the holder's Unlock", r.at.Sub(unlocked).Round(time.Millisecond))
	if d := r.at.Sub(unlocked); d > wokenWithin {
		t.Errorf("the waiter held %v after the holder's Unlock, want within %v: no message woke it", d.Round(time.Millisecond), wokenWithin)
	}
	if r.l.Token() <= held.Token() {
		t.Errorf("the waiter's token %d after the holder's %d: not increasing", r.l.Token(), held.Token())
	}
	x.noEvents(t, ctx, "after the wait")
}

// testMultiOwnerServedInOrder: waiters queue at the held name in turn, an
// owner's MultiLock, a plain Mutex of the name and another owner's
// MultiLock, and each release serves the next in that order, within
// wokenWithin, though the holders' TTL, the waiters' retry, is 30s.
func testMultiOwnerServedInOrder(t *testing.T, e env) {
	ctx := ctxFor(t, 60*time.Second)
	names := e.multiNames(t, ctx, 2)
	const ttl = 30 * time.Second
	held := mustLock(t, ctx, e.client(t, unhurried).Mutex(names[1], core.WithOwner("holder"), core.WithTTL(ttl)).Lock)
	c := e.client(t, unhurried, core.WithTTL(ttl))
	waiters := []struct {
		what string
		lock func(context.Context) (*core.Lease, error)
	}{
		{"the first owner's MultiLock", c.MultiLock(names, core.WithOwner("first")).Lock},
		{"the plain Mutex", c.Mutex(names[1]).Lock},
		{"the second owner's MultiLock", c.MultiLock(names, core.WithOwner("second")).Lock},
	}
	got := make([]<-chan locked, len(waiters))
	for i, w := range waiters {
		got[i] = e.inLine(t, ctx, queueKey(names[1]), int64(i+1), w.lock)
	}
	for i, w := range waiters {
		released := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-got[i]:
			if r.err != nil {
				t.Fatalf("%s: %v", w.what, r.err)
			}
			if d := r.at.Sub(released); d > wokenWithin {
				t.Fatalf("%s held %v after the release, want within %v: it was not woken by a message", w.what, d.Round(time.Millisecond), wokenWithin)
			}
			if r.l.Token() <= held.Token() {
				t.Errorf("%s's token %d after %d: not increasing", w.what, r.l.Token(), held.Token())
			}
			held = r.l
		case <-time.After(wokenWithin):
			t.Fatalf("%s, in line after %d others, did not hold within %v of the release", w.what, i, wokenWithin)
		}
		for j := i + 1; j < len(got); j++ {
			select {
			case r := <-got[j]:
				t.Fatalf("%s, behind, returned (%v) while %s holds", waiters[j].what, r.err, w.what)
			default:
			}
		}
	}
	held.Unlock(ctx)
}

// testMultiOwnerLeaverPassesOn: two owners' MultiLock waiters queue at the
// held name. The release reserves it for the first, whose attempt it
// wakes is held at a gate while its Lock gives up: its leave passes the
// reservation on to the second, which holds within wokenWithin, not at
// its retry, the holder's TTL (30s).
func testMultiOwnerLeaverPassesOn(t *testing.T, e env) {
	ctx := ctxFor(t, 60*time.Second)
	names := e.multiNames(t, ctx, 2)
	lock := lockKey(names[1])
	held := mustLock(t, ctx, e.client(t, unhurried).Mutex(names[1], core.WithOwner("holder"), core.WithTTL(30*time.Second)).Lock)
	first, g := e.gatedClient(t, func(op string) bool { return op == "MutexAcquireOwned" }, unhurried, core.WithTTL(time.Minute))
	fctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	gotFirst := e.inLine(t, fctx, queueKey(names[1]), 1, first.MultiLock(names, core.WithOwner("first")).Lock)
	gotSecond := e.inLine(t, ctx, queueKey(names[1]), 2, e.client(t, unhurried, core.WithTTL(time.Minute)).MultiLock(names, core.WithOwner("second")).Lock)
	g.close()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	g.reached(t, wokenWithin, "after the release, the first waiter") // its attempt waits at the gate
	e.everyNode(t, func(r redis.UniversalClient) error {
		if v := r.Get(ctx, lock).Val(); !strings.HasPrefix(v, "reserved:") {
			t.Errorf("the released name holds %q, want it reserved for the first waiter", v)
		}
		return nil
	})
	gaveUp := time.Now()
	giveUp()
	g.open()
	if r := <-gotFirst; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the first waiter, which gave up: got %v, want context.Canceled", r.err)
	}
	expectWoken(t, gotSecond, gaveUp).Unlock(ctx)
}

// testMultiOwnerLostWake: every message to an owner's MultiLock waiter is
// lost (a listener that stalled for good). The holder's release reserves
// the name for the waiter, which does not hear it: it takes the names at
// its own retry, the holder's TTL, and then holds them alone.
func testMultiOwnerLostWake(t *testing.T, e env) {
	ctx := ctxFor(t, 30*time.Second)
	names := e.multiNames(t, ctx, 2)
	const holderTTL = 1500 * time.Millisecond
	held := mustLock(t, ctx, e.client(t, unhurried).Mutex(names[1], core.WithOwner("holder"), core.WithTTL(holderTTL)).Lock)
	w, fds := e.faultyClient(t, func(faults.Call) faults.Fault { return faults.Fault{} }, unhurried, core.WithTTL(10*time.Second))
	for _, fd := range fds {
		fd.HoldMessages(func(string, string) bool { return true })
	}
	defer func() {
		for _, fd := range fds {
			fd.ReleaseMessages()
		}
	}()
	got := e.inLine(t, ctx, queueKey(names[1]), 1, w.MultiLock(names, core.WithOwner("waiter")).Lock)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	var r locked
	select {
	case r = <-got:
	case <-time.After(holderTTL + 3*time.Second):
		t.Fatalf("the waiter did not hold within the holder's TTL (%v) and 3s of the release, its messages lost", holderTTL)
	}
	if r.err != nil {
		t.Fatalf("the waiter, its messages lost: %v", r.err)
	}
	if r.l.Token() <= held.Token() {
		t.Errorf("the waiter's token %d after the holder's %d: not increasing", r.l.Token(), held.Token())
	}
	for _, fd := range fds {
		fd.ReleaseMessages() // they come late: nothing changes
	}
	time.Sleep(100 * time.Millisecond)
	e.namesRefused(t, ctx, names, "while the waiter holds them")
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
}

// testMultiOwnerCopiedWake: every message to an owner's MultiLock waiter
// comes twice, and the first ones come late. The release reserves the
// name for the waiter, whose messages are held back until the reservation
// ran out and another owner took the name. Then they come, each twice:
// they wake the waiter once per node at most (a copy wakes no one), and
// its attempts are refused while the other holds. The other's release
// reserves the name for it and tells it, twice again: it holds within
// wokenWithin, and alone.
func testMultiOwnerCopiedWake(t *testing.T, e env) {
	ctx := ctxFor(t, 30*time.Second)
	names := e.multiNames(t, ctx, 2)
	held := mustLock(t, ctx, e.client(t, unhurried).Mutex(names[1], core.WithOwner("holder"), core.WithTTL(10*time.Second)).Lock)
	w, fds := e.faultyClient(t, func(faults.Call) faults.Fault { return faults.Fault{} }, unhurried, core.WithTTL(10*time.Second))
	for _, fd := range fds {
		fd.HoldMessages(func(string, string) bool { return true })
		fd.DuplicateMessages(func(string, string) bool { return true })
	}
	released := false
	release := func() {
		if !released {
			released = true
			for _, fd := range fds {
				fd.ReleaseMessages()
			}
		}
	}
	defer release()
	got := e.inLine(t, ctx, queueKey(names[1]), 1, w.MultiLock(names, core.WithOwner("waiter")).Lock)
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond) // the reservation (200ms) runs out unheard
	other, err := e.client(t, unhurried).Mutex(names[1], core.WithOwner("other"), core.WithTTL(10*time.Second)).TryLock(ctx)
	if err != nil {
		t.Fatalf("another owner's TryLock once the reservation ran out: %v", err)
	}
	before := fds[0].Calls("MutexAcquireOwned")
	release()
	time.Sleep(500 * time.Millisecond)
	select {
	case r := <-got:
		if r.err == nil {
			r.l.Unlock(ctx)
		}
		t.Fatalf("the waiter's Lock returned (%v) while another owner holds %s", r.err, names[1])
	default:
	}
	// Each attempt takes the first name and is refused at the second.
	if attempts := (fds[0].Calls("MutexAcquireOwned") - before) / 2; attempts > len(e.addrs) {
		t.Errorf("the late messages, each twice, made the waiter attempt %d times, want at most one per node (%d): a copy woke it", attempts, len(e.addrs))
	}
	unlocked := time.Now()
	if err := other.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := expectWoken(t, got, unlocked)
	if l.Token() <= other.Token() {
		t.Errorf("the waiter's token %d after the other owner's %d: not increasing", l.Token(), other.Token())
	}
	time.Sleep(100 * time.Millisecond) // the copies come
	e.namesRefused(t, ctx, names, "while the waiter holds them")
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("the waiter's Unlock: %v", err)
	}
}

// namesRefused fails the case unless another owner's TryLock of each name
// is refused.
func (e env) namesRefused(t *testing.T, ctx context.Context, names []string, when string) {
	t.Helper()
	for _, n := range names {
		if l, err := e.client(t, unhurried).Mutex(n, core.WithOwner("intruder")).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			if l != nil {
				l.Unlock(ctx)
			}
			t.Errorf("another owner's TryLock of %s %s: got %v, want ErrNotAcquired: two holders", n, when, err)
		}
	}
}
