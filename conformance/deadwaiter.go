package conformance

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// deadHold is the TTL a dead waiter's ticket asks for: the live waiter
// behind it must not wait it out.
const deadHold = 5 * time.Second

// testDeadWaiterPassedOver has a waiter whose process died ahead of a
// live one, on nodes that are one server each (its secret says so, as a
// Client's does there): nobody listens on its Client's channel, so the
// release passes it over and the live waiter takes the lock at once, not
// after the dead one's grant (5s) or the holder's TTL (10s), which its
// last attempt read.
func testDeadWaiterPassedOver(t *testing.T, e env) {
	testDeadAheadPassedOver(t, e, "g:"+strconv.FormatInt(deadHold.Milliseconds(), 10)+":DEADTOKEN0:"+deadSecret, 1)
}

// testDeadOwnerWaiterPassedOver is testDeadWaiterPassedOver with an
// owner's waiter (WithOwner), which a release reserves the lock to.
func testDeadOwnerWaiterPassedOver(t *testing.T, e env) {
	testDeadAheadPassedOver(t, e, "o:"+deadSecret, 1)
}

// testDeadMultiWaiterPassedOver is testDeadWaiterPassedOver with a
// MultiLock's waiter, which a release grants this name and tells to come
// for its other names.
func testDeadMultiWaiterPassedOver(t *testing.T, e env) {
	testDeadAheadPassedOver(t, e, "m:ab:"+strconv.FormatInt(deadHold.Milliseconds(), 10)+":DEADTOKEN0:"+deadSecret, 1)
}

// deadSecret is a secret as a Client stores it on a node that is one
// server.
const deadSecret = "soloDEADSECRET"

// testDeadCrowdPassedOver is testDeadWaiterPassedOver with the waiters of
// a process that died waiting with several goroutines on the lock: five
// tickets of one Client that listens nowhere.
func testDeadCrowdPassedOver(t *testing.T, e env) {
	testDeadAheadPassedOver(t, e, "g:"+strconv.FormatInt(deadHold.Milliseconds(), 10)+":DEADTOKEN0:"+deadSecret, 5)
}

// testDeadAheadPassedOver puts crowd tickets of a dead Client, each
// holding value, ahead of a live waiter, and releases: the live waiter
// must acquire within wokenWithin, not at the holder's TTL (10s), which
// its last attempt read.
func testDeadAheadPassedOver(t *testing.T, e env, value string, crowd int) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	const holderTTL = 10 * time.Second
	held := mustLock(t, ctx, e.client(t).Mutex(n, core.WithTTL(holderTTL)).TryLock)
	got := e.waiter(t, ctx, e.client(t).Mutex(n))
	e.everyNode(t, func(r redis.UniversalClient) error {
		for i := range crowd {
			dead := ticketKey(lockKey(n), "DEADCLIENT:DEADWAITER"+strconv.Itoa(i))
			if err := putTicket(ctx, r, lockKey(n), dead, value, holderTTL); err != nil {
				return err
			}
			if err := r.ZAdd(ctx, queueKey(n), redis.Z{Score: float64(i), Member: dead}).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	start := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	// Behind them all, the live waiter is told at once.
	expectWoken(t, got, start).Unlock(ctx)
}

// testSemaphoreDeadWaiterPassedOver is testDeadWaiterPassedOver for a
// Semaphore: a waiter for one permit whose process died heads the line,
// on nodes that are one server each, ahead of a live one. The release
// must pass it over and wake the live waiter, which takes the permit at
// once, not once the dead one's ticket lapsed (its wait, 10s here) nor at
// the holder's TTL (10s), which its last attempt read.
func testSemaphoreDeadWaiterPassedOver(t *testing.T, e env) {
	got, start := e.semaphoreDeadAhead(t, 1, 10*time.Second, 10*time.Second)
	expectWoken(t, got, start).Unlock(context.Background())
}

// testSemaphoreDeadClientsPassedOver is testSemaphoreDeadWaiterPassedOver
// with the waiters of five processes that died waiting (five Clients, one
// ticket each, their tickets living 30s). A release passes over at most
// four Clients (lib/pass_deaf.lua), so the fifth may still head the line
// after it; but the live waiter must then take the permit at its safety
// net, the holder's TTL (5s) at the latest, as a Mutex waiter does, and
// not once the dead ones' tickets lapse.
func testSemaphoreDeadClientsPassedOver(t *testing.T, e env) {
	const holderTTL = 5 * time.Second
	got, start := e.semaphoreDeadAhead(t, 5, holderTTL, 30*time.Second)
	r := <-got
	if r.err != nil {
		t.Fatalf("the live waiter: %v", r.err)
	}
	defer r.l.Unlock(context.Background())
	d := r.at.Sub(start)
	t.Logf("the live waiter took the permit %v after the release", d.Round(time.Millisecond))
	if d > holderTTL+2*time.Second {
		t.Errorf("the live waiter behind five dead Clients took the permit %v after the release, want within the holder's TTL (%v) and 2s, its safety net: the dead held the line up until their tickets lapsed", d.Round(time.Millisecond), holderTTL)
	}
}

// semaphoreDeadAhead holds a semaphore's one permit for holderTTL, queues
// a live waiter for it, puts the tickets of dead Clients (one each,
// living deadWait) ahead of it in line on every node, and releases the
// permit: it returns the live waiter's result and when the release began.
func (e env) semaphoreDeadAhead(t *testing.T, dead int, holderTTL, deadWait time.Duration) (<-chan locked, time.Time) {
	ctx, n := ctxFor(t, 60*time.Second), name(t)
	held, err := e.client(t).Semaphore(n, 1, core.WithTTL(holderTTL)).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 1), 1)
	stem := semKey(n, "")
	e.everyNode(t, func(r redis.UniversalClient) error {
		for i := range dead {
			ticket := ticketKey(stem, "DEADCLIENT"+strconv.Itoa(i)+":DEADWAITER")
			if err := putTicket(ctx, r, stem, ticket, "1:"+deadSecret, deadWait); err != nil {
				return err
			}
			if err := r.ZAdd(ctx, semKey(n, ":q"), redis.Z{Score: float64(i), Member: ticket}).Err(); err != nil { // ahead of the live one
				return err
			}
		}
		return nil
	})
	start := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	return got, start
}
