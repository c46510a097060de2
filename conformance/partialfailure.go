package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// partialFailureMutexCases are the Mutex cases of partial failure: a request
// lost on some nodes, or an earlier lease of the same owner, must not free
// a lock that a valid lease holds. They run on every topology.
var partialFailureMutexCases = map[string]func(*testing.T, env){
	"ReentryFailedKeepsHold":     testReentryFailedKeepsHold("Mutex"),
	"LostLeaseUnlockSparesNewer": testLostLeaseUnlockSparesNewer,
	"InnerLeaseCannotShorten":    testInnerLeaseCannotShorten,
	"LateExtendCannotShorten":    testLateExtendCannotShorten("Mutex"),
}

// owner is a WithOwner of its own.
func owner() core.Option { return core.WithOwner("owner-" + rand.Text()[:8]) }

// stillHeld fails t unless another owner's TryLock of name fails with
// ErrNotAcquired while l is valid; when is the moment, for the message.
func (e env) stillHeld(t *testing.T, ctx context.Context, name string, l *core.Lease, when string) {
	t.Helper()
	other, err := e.client(t).Mutex(name, owner()).TryLock(ctx)
	left := time.Until(l.Until())
	if err == nil {
		other.Unlock(ctx)
	}
	if l.Err() != nil || left <= 0 {
		t.Fatalf("%s: the lease ended before the check (%v, %v left): the check proves nothing", when, l.Err(), left)
	}
	if err == nil {
		t.Fatalf("%s: another owner acquired the lock (token %d) while lease %d was valid for %v more: two holders", when, other.Token(), l.Token(), left.Round(time.Millisecond))
	}
	if !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("%s: another owner's TryLock: got %v, want ErrNotAcquired", when, err)
	}
}

// Owner O's lease A holds on every node; O's second
// acquisition is granted on node 0 and fails on every other node before
// reaching it (on one node, on that node). Its undo must not take away
// A's hold where the re-entry never added to it. A re-entry that lands
// late, after its undo, must not keep the lock either, beyond its own TTL.
// A MultiLock's owner takes each name apart: its first name is the one
// that fails.
func testReentryFailedKeepsHold(primitive string) func(*testing.T, env) {
	return func(t *testing.T, e env) { reentryFailedKeepsHold(t, e, reentrant[primitive]) }
}

// reentrant takes a lease of owner o whose first name is n.
var reentrant = map[string]func(ctx context.Context, c *core.Client, n string, o core.Option, ttl time.Duration) (*core.Lease, error){
	"Mutex": func(ctx context.Context, c *core.Client, n string, o core.Option, ttl time.Duration) (*core.Lease, error) {
		return c.Mutex(n, o, core.WithTTL(ttl)).TryLock(ctx)
	},
	"MultiLock": func(ctx context.Context, c *core.Client, n string, o core.Option, ttl time.Duration) (*core.Lease, error) {
		return c.MultiLock([]string{n, n + "/1"}, o, core.WithTTL(ttl)).TryLock(ctx)
	},
}

func reentryFailedKeepsHold(t *testing.T, e env, take func(context.Context, *core.Client, string, core.Option, time.Duration) (*core.Lease, error)) {
	failing := []int{0}
	if len(e.addrs) > 1 {
		failing = failing[:0]
		for i := 1; i < len(e.addrs); i++ {
			failing = append(failing, i)
		}
	}
	const reentryTTL = time.Second
	for _, c := range []struct {
		name  string
		fault faults.Fault
	}{{"Dropped", faults.Fault{Kind: faults.Drop}}, {"Delayed", later}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, n := ctxFor(t, 30*time.Second), name(t)
			var s faults.Schedule
			cl, fds := e.faultyClient(t, s.Hook)
			o := owner()
			a, err := take(ctx, cl, n, o, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			for _, i := range failing {
				s.Add(faults.Rule{Node: i, Op: "MutexAcquireOwned", Key: lockKey(n), Nth: 1, Fault: c.fault})
			}
			if r, err := take(ctx, cl, n, o, reentryTTL); err == nil {
				r.Unlock(ctx)
				t.Fatalf("the re-entry succeeded although its request failed on %d of %d nodes", len(failing), len(e.addrs))
			}
			e.stillHeld(t, ctx, n, a, fmt.Sprintf("after the owner's re-entry failed on nodes %v", failing))
			flush(fds) // a delayed re-entry lands now, while A holds
			if err := a.Unlock(ctx); err != nil {
				t.Fatalf("Unlock of the owner's first lease after its re-entry failed: %v", err)
			}
			// Nothing holds the lock now but what the late re-entry left,
			// which must not outlive the re-entry's TTL.
			wctx, cancel := context.WithTimeout(ctx, reentryTTL+2*time.Second)
			defer cancel()
			start := time.Now()
			l, err := e.client(t).Mutex(n, owner()).Lock(wctx)
			if err != nil {
				t.Fatalf("a new owner's Lock after the only lease was released, %v after a re-entry of TTL %v failed: %v", time.Since(start).Round(time.Millisecond), reentryTTL, err)
			}
			l.Unlock(ctx)
		})
	}
}

// Lease A of owner O expires, then O acquires lease C.
// A's late Unlock (or Extend) must report ErrNotHeld and leave C's hold
// alone.
func testLostLeaseUnlockSparesNewer(t *testing.T, e env) {
	for _, c := range []struct {
		name string
		late func(context.Context, *core.Lease) error
	}{
		{"Unlock", func(ctx context.Context, a *core.Lease) error { return a.Unlock(ctx) }},
		{"Extend", func(ctx context.Context, a *core.Lease) error { return a.Extend(ctx, 100*time.Millisecond) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, n := ctxFor(t, 30*time.Second), name(t)
			cl, o := e.client(t), owner()
			a := mustLock(t, ctx, cl.Mutex(n, o, core.WithTTL(300*time.Millisecond)).TryLock)
			<-a.Done()
			e.gone(t, ctx, 10*time.Second, lockKey(n))
			newer, err := cl.Mutex(n, o, core.WithTTL(10*time.Second)).TryLock(ctx)
			if err != nil {
				t.Fatalf("the owner's new lease after its first one expired: %v", err)
			}
			if err := c.late(ctx, a); !errors.Is(err, core.ErrNotHeld) {
				t.Fatalf("%s of the expired lease: got %v, want ErrNotHeld", c.name, err)
			}
			time.Sleep(300 * time.Millisecond) // what a 100ms extension would have left expires
			e.stillHeld(t, ctx, n, newer, c.name+" of the owner's expired lease, while its newer lease holds")
			if err := newer.Unlock(ctx); err != nil {
				t.Fatalf("Unlock of the newer lease: %v", err)
			}
		})
	}
}

// An inner lease of the owner must not shorten the
// lock under its outer lease, by hand or by its watchdog.
func testInnerLeaseCannotShorten(t *testing.T, e env) {
	t.Run("Extend", func(t *testing.T) {
		ctx, n := ctxFor(t, 30*time.Second), name(t)
		cl, o := e.client(t), owner()
		outer, inner := e.nested(t, ctx, cl, n, o, core.WithTTL(10*time.Second))
		inner.Extend(ctx, 100*time.Millisecond)
		time.Sleep(300 * time.Millisecond)
		e.stillHeld(t, ctx, n, outer, "300ms after the inner lease's Extend(100ms)")
		inner.Unlock(ctx)
		outer.Unlock(ctx)
	})
	t.Run("AutoExtend", func(t *testing.T) {
		ctx, n := ctxFor(t, 30*time.Second), name(t)
		cl, o := e.client(t), owner()
		outer, inner := e.nested(t, ctx, cl, n, o, core.WithTTL(300*time.Millisecond), core.WithAutoExtend())
		first := inner.Until()
		for inner.Until().Equal(first) {
			if time.Since(first) > 5*time.Second {
				t.Fatalf("the inner lease's watchdog did not extend it in 5s (%v)", inner.Err())
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err := inner.Unlock(ctx); err != nil {
			t.Fatalf("Unlock of the inner lease: %v", err)
		}
		time.Sleep(600 * time.Millisecond) // twice the inner lease's TTL
		e.stillHeld(t, ctx, n, outer, "600ms after an inner lease of TTL 300ms, extended by its watchdog, was released")
		outer.Unlock(ctx)
	})
}

// nested takes an outer lease of TTL 10s for owner o, then an inner one
// with innerOpts.
func (e env) nested(t *testing.T, ctx context.Context, cl *core.Client, name string, o core.Option, innerOpts ...core.Option) (outer, inner *core.Lease) {
	t.Helper()
	outer, err := cl.Mutex(name, o, core.WithTTL(10*time.Second)).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inner, err = cl.Mutex(name, append([]core.Option{o}, innerOpts...)...).TryLock(ctx)
	if err != nil {
		t.Fatalf("the owner's re-entry: %v", err)
	}
	return outer, inner
}

// On nodes A, B, C (0, 1, 2) and 2 permits: lease L gets
// slot s on A and B and the other slot on C, whose reply is lost (X holds
// s there); L's Extend fails on A and reaches B and C; L's slot lapses on
// A, and X's on C. Extend must count only the nodes that hold L's own
// slots: else two more leases are granted, and three are valid at once.
func testSemaphoreExtendCountsOwnSlot(t *testing.T, e env) {
	const a, b, c, ttl = 0, 1, 2, 1500 * time.Millisecond
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	permits, holders := semKey(n, ""), semKey(n, ":holders")
	// X's Client loses every undo on C, which it asks again until X's
	// TTL ends.
	var xs faults.Schedule
	xs.Add(faults.Rule{Node: a, Op: "SemaphoreAcquire", Key: permits, Nth: 1, Fault: faults.Fault{Kind: faults.Drop}},
		faults.Rule{Node: b, Op: "SemaphoreAcquire", Key: permits, Nth: 1, Fault: faults.Fault{Kind: faults.Drop}},
		faults.Rule{Node: c, Op: "SemaphoreRelease", Key: permits, Fault: faults.Fault{Kind: faults.Drop}})
	xc, xfds := e.faultyClient(t, xs.Hook)
	if x, err := xc.Semaphore(n, 2, core.WithTTL(ttl)).TryAcquire(ctx, 1); err == nil {
		x.Unlock(ctx)
		t.Fatal("setup: X was granted by one node of three")
	}
	var s faults.Schedule
	cl, _ := e.faultyClient(t, s.Hook)
	sem := cl.Semaphore(n, 2, core.WithTTL(ttl))
	for deadline := time.Now().Add(2 * time.Second); xfds[c].Calls("SemaphoreRelease") < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("setup: X's undo on C was not asked again within 2s")
		}
	}
	if got := e.heldSlots(t, ctx, c, n); got != 1 {
		t.Fatalf("setup: node C has %d slots, want X's one", got)
	}
	slot := func(node int, l *core.Lease) string {
		token := strings.Split(l.ID(), "-")[1] // <n>-<token>-<slots>
		v, _ := e.admin(t, node).HGet(ctx, holders, holdersTokenField+token).Result()
		return v
	}
	// L's slots: the same on A and C when L's scan starts at the slot X
	// does not hold (a random one); then L gives them back and tries again.
	var l *core.Lease
	for try := 0; l == nil; try++ {
		if try == 20 {
			t.Fatal("setup: 20 leases took the same slot on A and C")
		}
		// C's reply is lost, and so is the give-back of C's slots that a
		// won acquisition sends where the reply was lost.
		s.Add(faults.Rule{Node: c, Op: "SemaphoreAcquire", Key: permits, Nth: 1, Fault: faults.Fault{Kind: faults.LoseReply}},
			faults.Rule{Node: c, Op: "SemaphoreRelease", Key: permits, Nth: 1, Fault: faults.Fault{Kind: faults.Drop}})
		got, err := sem.TryAcquire(ctx, 1)
		if err != nil {
			t.Fatalf("setup: L's acquisition with C's reply lost: %v", err)
		}
		if onA, onC := slot(a, got), slot(c, got); onC != "" && onA != onC {
			l = got
			continue
		}
		// A vote need not wait for C's lost reply, and then sends no
		// give-back there: the drop would take the Unlock's release on C
		// instead and leave C full (X's slot and this one) for the next
		// try.
		s.Clear()
		if err := got.Unlock(ctx); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	s.Add(faults.Rule{Node: a, Op: "SemaphoreExtend", Key: permits, Nth: 1, Fault: faults.Fault{Kind: faults.Drop}})
	l.Extend(ctx, 20*time.Second) // whether it holds is up to the library; the count below is not
	time.Sleep(ttl + 700*time.Millisecond)
	more := cl.Semaphore(n, 2, core.WithTTL(20*time.Second))
	leases := []*core.Lease{l}
	for range 2 {
		if m, err := more.TryAcquire(ctx, 1); err == nil {
			leases = append(leases, m)
		}
	}
	var valid []uint64
	for _, m := range leases {
		if m.Err() == nil && time.Now().Before(m.Until()) {
			valid = append(valid, m.Token())
		}
	}
	for _, m := range leases {
		m.Unlock(ctx)
	}
	if len(valid) > 2 {
		t.Fatalf("%d leases valid at once (tokens %v) on a semaphore of 2 permits, after L's Extend failed on A and reached B and C, where L holds different slots", len(valid), valid)
	}
}
