package goredis_test

import (
	"context"
	"fmt"
	"log"
	"sync"
)

// A count-down latch (core.Latch): workers count down as they finish, and
// Wait returns in every waiter once all of them did.
func Example_latch() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	const workers = 3
	l := c.Latch("nightly-import")
	if ok, err := l.TrySetCount(ctx, workers); err != nil || !ok {
		log.Fatal("TrySetCount: ", ok, err)
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			// ... one part of the import ...
			if err := l.CountDown(ctx); err != nil {
				log.Fatal(err)
			}
		})
	}
	if err := l.Wait(ctx); err != nil {
		log.Fatal(err)
	}
	count, _ := l.Count(ctx)
	fmt.Println("all workers done; count", count)
	wg.Wait()

	// Opened, the latch can be set again.
	ok, _ := l.TrySetCount(ctx, 1)
	fmt.Println("set again:", ok)

	// Output:
	// all workers done; count 0
	// set again: true
}

// core.Latch.Delete opens a latch at any count: its waiters return, as
// when the count reaches zero, and it can be set again. Here the import is
// called off before its workers are done.
func Example_latchDelete() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	l := c.Latch("nightly-import")
	if ok, err := l.TrySetCount(ctx, 3); err != nil || !ok {
		log.Fatal("TrySetCount: ", ok, err)
	}
	waited := make(chan error)
	go func() { waited <- l.Wait(ctx) }()

	// ... the import is called off ...
	if err := l.Delete(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("Wait returned:", <-waited)
	count, _ := l.Count(ctx)
	fmt.Println("count", count)
	ok, _ := l.TrySetCount(ctx, 3)
	fmt.Println("set again:", ok)

	// Output:
	// Wait returned: <nil>
	// count 0
	// set again: true
}
