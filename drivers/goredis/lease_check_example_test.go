package goredis_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/redlockgo/redlock/core"
)

// Before a side effect that the resource cannot fence (an email, a call
// to a payment provider), ask the servers whether the lease still holds
// and for how long: one read-only command per node.
func Example_leaseValid() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	lease, err := c.Mutex("payouts", core.WithTTL(10*time.Second)).TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)

	ok, err := lease.Valid(ctx)
	if err != nil {
		log.Fatal(err) // ErrNoQuorum: too few nodes answered to tell
	}
	left, err := lease.TTL(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("valid:", ok)
	fmt.Println("time left for the call:", left > 5*time.Second)

	// Output:
	// valid: true
	// time left for the call: true
}
