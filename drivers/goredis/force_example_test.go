package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redlockgo/redlock/core"
)

// A holder that is stuck is freed by an operator; the holder hears at its
// next Extend. The next lease's fencing token is higher: the resource
// refuses the stuck holder's writes by it.
func Example_forceUnlock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	stuck, err := c.Mutex("refunds").TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Mutex("refunds").ForceUnlock(ctx); err != nil {
		log.Fatal(err)
	}
	next, err := c.Mutex("refunds").TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer next.Unlock(ctx)
	fmt.Println("next token is higher:", next.Token() > stuck.Token())
	fmt.Println("stuck holder lost it:", errors.Is(stuck.Extend(ctx, 10*time.Second), core.ErrLost))

	// Output:
	// next token is higher: true
	// stuck holder lost it: true
}

// An operator takes a stuck holder's lock over at once; the waiters keep
// their places. The stuck holder hears at its next Extend, and the
// resource refuses its writes by the operator's higher fencing token.
func Example_forceLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	stuck, err := c.Mutex("payouts").TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	taken, err := c.Mutex("payouts").ForceLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer taken.Unlock(ctx)
	fmt.Println("operator's token is higher:", taken.Token() > stuck.Token())
	fmt.Println("stuck holder lost it:", errors.Is(stuck.Extend(ctx, 10*time.Second), core.ErrLost))

	// Output:
	// operator's token is higher: true
	// stuck holder lost it: true
}
