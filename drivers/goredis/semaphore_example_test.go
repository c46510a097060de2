package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlockgo/redlock/core"
)

// A core.Semaphore of 3 permits: a lease may take several at once, and a
// request for more than are free fails (TryAcquire) or waits (Acquire).
func Example_semaphore() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	s := c.Semaphore("pdf-renderers", 3)
	two, err := s.TryAcquire(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	free, _ := s.Available(ctx)
	fmt.Println("free after taking 2:", free)

	_, err = s.TryAcquire(ctx, 2)
	fmt.Println("2 more:", errors.Is(err, core.ErrNotAcquired))

	// The number of permits is stored for every client.
	if err := s.SetPermits(ctx, 4); err != nil {
		log.Fatal(err)
	}
	more, err := s.TryAcquire(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	free, _ = s.Available(ctx)
	fmt.Println("free after SetPermits(4) and 2 more:", free)

	two.Unlock(ctx)
	more.Unlock(ctx)
	free, _ = s.Available(ctx)
	fmt.Println("free after both Unlocks:", free)

	// Output:
	// free after taking 2: 1
	// 2 more: true
	// free after SetPermits(4) and 2 more: 0
	// free after both Unlocks: 4
}

// A permit handed on with a job is released by whoever finishes the job,
// by its permit ID (core.Semaphore.Release).
func Example_semaphoreRelease() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	exports := c.Semaphore("exports", 1)
	l, err := exports.TryAcquire(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	job := struct{ permit string }{permit: l.ID()} // queued for another process

	// In the process that finished the job:
	if err := exports.Release(ctx, job.permit); err != nil {
		log.Fatal(err)
	}
	free, _ := exports.Available(ctx)
	fmt.Println("free:", free)
	// Output: free: 1
}

// The number of permits set once by whichever process starts first
// (core.Semaphore.TrySetPermits), raised for a busy hour
// (core.Semaphore.AddPermits), and every free permit taken at once for
// maintenance (core.Semaphore.DrainPermits).
func Example_semaphorePermits() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()
	s := c.Semaphore("workers", 1) // 1 until a number is stored

	set, err := s.TrySetPermits(ctx, 3)
	if err != nil {
		log.Fatal(err)
	}
	again, _ := s.TrySetPermits(ctx, 10)
	fmt.Println("set:", set, "set again:", again)

	if err := s.AddPermits(ctx, 2); err != nil {
		log.Fatal(err)
	}
	one, err := s.TryAcquire(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	all, n, err := s.DrainPermits(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("drained:", n)
	_, _, err = s.DrainPermits(ctx)
	fmt.Println("nothing left:", errors.Is(err, core.ErrNotAcquired))

	left, _ := s.TTL(ctx, one.ID()) // by permit ID, from any process
	fmt.Println("first permit held:", left > 0)
	one.Unlock(ctx)
	all.Unlock(ctx)

	// Output:
	// set: true set again: false
	// drained: 4
	// nothing left: true
	// first permit held: true
}
