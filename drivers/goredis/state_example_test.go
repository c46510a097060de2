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

// A lease taken with metadata: State shows who holds the name.
func Example_mutexMetadata() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	lease, err := c.Mutex("nightly-report", core.WithMetadata("host-7 pid 42")).TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)
	fmt.Println("lease:", lease.Metadata())

	s, err := c.Mutex("nightly-report").State(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held by the lease:", s.Holder == lease.ID(), "metadata:", s.Metadata)

	// Output:
	// lease: host-7 pid 42
	// held by the lease: true metadata: host-7 pid 42
}
