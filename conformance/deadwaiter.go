package conformance

import (
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
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	const holderTTL = 10 * time.Second
	held, err := e.client(t).Semaphore(n, 1, core.WithTTL(holderTTL)).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 1), 1)
	stem := semKey(n, "")
	e.everyNode(t, func(r redis.UniversalClient) error {
		dead := ticketKey(stem, "DEADCLIENT:DEADWAITER")
		if err := putTicket(ctx, r, stem, dead, "1:"+deadSecret, holderTTL); err != nil {
			return err
		}
		return r.ZAdd(ctx, semKey(n, ":q"), redis.Z{Score: 0, Member: dead}).Err() // ahead of the live one
	})
	start := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	expectWoken(t, got, start).Unlock(ctx)
}
