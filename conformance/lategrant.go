package conformance

import (
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testLateGrantIgnored: a grant heard after it expired proves nothing
// about the lock. Waiter W queues behind H; every message to W's Client
// is held back (a stalled listener). H's release grants W the lock on
// every node, for W's 400ms TTL; unheard, the grants expire, and R takes
// the lock. Then the held messages arrive: too late for a lease counted
// from W's last attempt, they wake W, whose next attempt R refuses. W
// must not then take the old grants for a lease counted from that attempt
// while R holds; it gets the lock after R's release, with a higher token.
func testLateGrantIgnored(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	start := time.Now()
	at := func(what string) { t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), what) }
	h := mustLock(t, ctx, e.client(t, core.WithTTL(1500*time.Millisecond)).Mutex(n).Lock)
	w, fds := e.faultyClient(t, func(faults.Call) faults.Fault { return faults.Fault{} },
		core.WithTTL(400*time.Millisecond), core.WithNodeTimeout(100*time.Millisecond))
	for _, fd := range fds {
		fd.HoldMessages(func(string, string) bool { return true })
	}
	done := startLock(ctx, w.Mutex(n).Lock)
	for i := range e.addrs {
		awaitQueued(t, ctx, e, i, queueKey(n), done)
	}
	time.Sleep(200 * time.Millisecond) // W's attempts are over: it waits
	select {
	case res := <-done:
		t.Fatalf("W's Lock returned (%v) while H held the lock", res.err)
	default:
	}
	at("queued")
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	at("H released")
	time.Sleep(500 * time.Millisecond) // the grants to W expire unheard
	r, err := e.client(t, core.WithTTL(10*time.Second)).Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("R's TryLock once the grants W did not hear expired: %v", err)
	}
	defer r.Unlock(ctx)
	at("R holds")
	for _, fd := range fds {
		fd.ReleaseMessages()
	}
	at("released the messages")
	select {
	case res := <-done:
		if res.err == nil {
			at("W holds")
			defer res.l.Unlock(ctx)
			t.Fatalf("W's Lock returned a lease (token %d, %v left) from grants heard before its last attempt, while R holds the lock (token %d, %v left): two holders",
				res.l.Token(), time.Until(res.l.Until()).Round(time.Millisecond), r.Token(), time.Until(r.Until()).Round(time.Millisecond))
		}
		t.Fatalf("W's Lock failed while it should wait: %v", res.err)
	case <-time.After(time.Second):
	}
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatalf("W's Lock after R's release: %v", res.err)
		}
		defer res.l.Unlock(ctx)
		if res.l.Token() <= r.Token() {
			t.Fatalf("W's token %d after R's %d", res.l.Token(), r.Token())
		}
	case <-time.After(3 * time.Second):
		t.Fatal("W did not hold the lock within 3s of R's release")
	}
}
