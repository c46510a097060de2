package goredis_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redlockgo/redlock/core"
)

// Who holds a lock, read from the servers: what an operator asks first.
func Example_mutexState() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	m := c.Mutex("payouts", core.WithOwner("worker-1"))
	first, err := m.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer first.Unlock(ctx)
	again, err := m.TryLock(ctx) // the owner enters again
	if err != nil {
		log.Fatal(err)
	}
	defer again.Unlock(ctx)

	s, err := c.Mutex("payouts").State(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("locked:", s.Locked, "by", s.Holder, "holds:", s.Holds)
	fmt.Println("token is the latest lease's:", s.Token == again.Token())
	fmt.Println("waiting:", s.Waiting)

	// Output:
	// locked: true by worker-1 holds: 2
	// token is the latest lease's: true
	// waiting: 0
}
