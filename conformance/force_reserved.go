package conformance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testForceKeepsReservation forces an owner's Mutex twice, as an operator
// who retries does, while two owners' waiters wait in line. The first
// force reserves the lock for the first waiter, whose attempt is held
// back a moment; the second finds the lock free (reserved, held by no
// one) and must leave the reservation alone: the first waiter takes the
// lock, and the second waiter gets it only after it.
func testForceKeepsReservation(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	f := forcibles["MutexOwned"]
	held := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) {
		return f.lock(ctx, e.client(t, unhurried), n, core.WithTTL(10*time.Second))
	})
	first, g := e.gatedClient(t, func(op string) bool { return strings.HasPrefix(op, "MutexAcquire") }, unhurried, core.WithTTL(time.Minute))
	gotFirst := e.inLine(t, ctx, queueKey(n), 1, func(ctx context.Context) (*core.Lease, error) { return f.lock(ctx, first, n) })
	second := e.client(t, unhurried, core.WithTTL(time.Minute))
	gotSecond := e.inLine(t, ctx, queueKey(n), 2, func(ctx context.Context) (*core.Lease, error) { return f.lock(ctx, second, n) })
	g.close()

	admin := e.client(t, unhurried)
	if err := f.force(ctx, admin, n, held); err != nil {
		t.Fatalf("force-release with two waiters: %v", err)
	}
	g.reached(t, wokenWithin, "after the force-release, the first waiter") // its attempt waits at the gate
	if err := f.force(ctx, admin, n, nil); err != nil {
		t.Fatalf("the second force-release: %v", err)
	}
	// Well within the reservation's 200ms.
	time.Sleep(50 * time.Millisecond)
	select {
	case r := <-gotSecond:
		if r.err == nil {
			r.l.Unlock(ctx)
		}
		t.Fatalf("the second waiter got the lock (%v) while it was reserved for the first: the second force-release took the reservation from the first waiter in line", r.err)
	default:
	}
	g.open()
	r := <-gotFirst
	if r.err != nil {
		t.Fatalf("the first waiter: %v", r.err)
	}
	if r.l.Token() <= held.Token() {
		t.Fatalf("the first waiter's token %d after the forced holder's %d: not increasing", r.l.Token(), held.Token())
	}
	unlockOnce(t, ctx, r.l)
	w := expectWoken(t, gotSecond, time.Now())
	if w.Token() <= r.l.Token() {
		t.Fatalf("the second waiter's token %d after the first's %d: not increasing", w.Token(), r.l.Token())
	}
	unlockOnce(t, ctx, w)
}
