package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlockgo/redlock/core"
)

// A core.MultiLock takes several names as one, all or none: a transfer
// between two accounts locks both, and a Mutex on either account waits for
// it.
func Example_multiLock() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	// The names are taken in sorted order, whatever order they are given in.
	transfer := c.MultiLock([]string{"account:7", "account:3"})
	fmt.Println("names:", transfer.Names())

	single, err := c.Mutex("account:7").TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, err = transfer.TryLock(ctx)
	fmt.Println("while account:7 is held:", errors.Is(err, core.ErrNotAcquired))
	free, err := c.Mutex("account:3").TryLock(ctx)
	fmt.Println("account:3 left free:", err == nil)
	if err == nil {
		free.Unlock(ctx)
	}
	if err := single.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	lease, err := transfer.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	_, err = c.Mutex("account:3").TryLock(ctx)
	fmt.Println("account:3 under the MultiLock:", errors.Is(err, core.ErrNotAcquired))
	fmt.Println("token above account:7's:", lease.Token() > single.Token())
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// names: [account:3 account:7]
	// while account:7 is held: true
	// account:3 left free: true
	// account:3 under the MultiLock: true
	// token above account:7's: true
}
