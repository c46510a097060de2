package conformance

import (
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreDeadClientsPassedOver is testSemaphoreDeadWaiterPassedOver
// with the waiters of five processes that died waiting (five Clients,
// one ticket each, their tickets living 30s) ahead of a live one, on
// nodes that are one server each. Nobody listens on their Clients'
// channels. A release passes over at most four Clients (lib/pass_deaf.lua),
// so the fifth may still head the line after it; but the live waiter
// must then take the permit at its safety net, the holder's TTL (5s) at
// the latest, as a Mutex waiter does, and not once the dead ones' tickets
// lapse.
func testSemaphoreDeadClientsPassedOver(t *testing.T, e env) {
	ctx, n := ctxFor(t, 60*time.Second), name(t)
	const holderTTL, deadWait = 5 * time.Second, 30 * time.Second
	held, err := e.client(t).Semaphore(n, 1, core.WithTTL(holderTTL)).TryAcquire(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := e.semWaiter(t, ctx, e.client(t).Semaphore(n, 1), 1)
	stem := semKey(n, "")
	e.everyNode(t, func(r redis.UniversalClient) error {
		for i := range 5 {
			dead := ticketKey(stem, "DEADCLIENT"+strconv.Itoa(i)+":DEADWAITER")
			if err := putTicket(ctx, r, stem, dead, "1:"+deadSecret, deadWait); err != nil {
				return err
			}
			if err := r.ZAdd(ctx, semKey(n, ":q"), redis.Z{Score: float64(i), Member: dead}).Err(); err != nil { // ahead of the live one
				return err
			}
		}
		return nil
	})
	start := time.Now()
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the live waiter: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	d := r.at.Sub(start)
	t.Logf("the live waiter took the permit %v after the release", d.Round(time.Millisecond))
	if d > holderTTL+2*time.Second {
		t.Errorf("the live waiter behind five dead Clients took the permit %v after the release, want within the holder's TTL (%v) and 2s, its safety net: the dead held the line up until their tickets lapsed", d.Round(time.Millisecond), holderTTL)
	}
}
