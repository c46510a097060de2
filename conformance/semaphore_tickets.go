package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreTicketsLifetime follows a Semaphore's tickets hash: while
// waiters wait it holds their tickets and has an expiry; a waiter that
// takes permits deletes its ticket, and one that leaves (it gave up, or
// won on the other nodes) marks its own as left, for its TTL (an attempt
// of its may land later), so that once they are served or gone the hash
// holds those marks alone, and is gone when they lapse. Then dead waiters'
// lapsed tickets, which no one deletes, are dropped by the releases that
// follow (each samples a few fields), long before the hash would expire.
func testSemaphoreTicketsLifetime(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	stem := semKey(n, "")
	s := e.client(t).Semaphore(n, 1)
	held, err := s.TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	// The waiters' TTL: how long a mark stays, and a ticket without a refresh.
	const waiterTTL = time.Second
	w := e.client(t).Semaphore(n, 1, core.WithTTL(waiterTTL))
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	gives := e.inLine(t, ctx, semKey(n, ":q"), 1, func(context.Context) (*core.Lease, error) { return w.Acquire(short, 1) })
	served := e.inLine(t, ctx, semKey(n, ":q"), 2, func(ctx context.Context) (*core.Lease, error) { return w.Acquire(ctx, 1) })
	for i := range e.addrs {
		a := e.admin(t, i)
		if fields := len(e.ticketValues(t, ctx, i, stem)); fields != 2 {
			t.Fatalf("node %d: %d live tickets with two waiters in line, want 2", i, fields)
		}
		if ttl := a.PTTL(ctx, ticketsKey(stem)).Val(); ttl <= 0 {
			t.Fatalf("node %d: the tickets hash has no expiry (PTTL %v)", i, ttl)
		}
	}
	if r := <-gives; !errors.Is(r.err, context.DeadlineExceeded) {
		t.Fatalf("the waiter that gives up: got %v, want context.DeadlineExceeded", r.err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-served
	if r.err != nil {
		t.Fatalf("the waiter served: %v", r.err)
	}
	if err := r.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Marks alone: the one that gave up left its on every node, and the
	// one served its where it did not win (if any).
	for i := range e.addrs {
		live := e.ticketValues(t, ctx, i, stem)
		if len(live) == 0 || slices.ContainsFunc(slices.Collect(maps.Values(live)), func(v string) bool { return v != "left" }) {
			t.Fatalf("node %d: live tickets %v once both waiters are served or gone, want the marks of their leaves alone", i, live)
		}
	}
	e.gone(t, ctx, waiterTTL+time.Second, ticketsKey(stem))

	const dead = 40
	e.everyNode(t, func(a redis.UniversalClient) error {
		for i := range dead {
			if err := putTicket(ctx, a, stem, ticketKey(stem, fmt.Sprintf("dead:%d", i)), "1:x", 50*time.Millisecond); err != nil {
				return err
			}
		}
		return a.PExpire(ctx, ticketsKey(stem), time.Hour).Err() // as a live waiter's join would keep it
	})
	time.Sleep(100 * time.Millisecond) // they lapse
	for range dead {                   // a release samples 4 fields: 10 releases drop all 40
		l, err := s.TryAcquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	e.gone(t, ctx, 2*time.Second, ticketsKey(stem))
}
