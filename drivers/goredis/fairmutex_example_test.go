package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/redlockgo/redlock/core"
)

// A fair lock (core.FairMutex) hands itself to its waiters in the order
// they came; TryLock never jumps the line.
func Example_fairMutex() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	m := c.FairMutex("printer")
	first, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	next := make(chan *core.Lease)
	go func() {
		l, err := m.Lock(ctx) // waits in line until first is unlocked
		if err != nil {
			log.Fatal(err)
		}
		next <- l
	}()
	_, err = m.TryLock(ctx)
	fmt.Println("busy:", errors.Is(err, core.ErrNotAcquired))

	if err := first.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	second := <-next
	fmt.Println("token increased:", second.Token() > first.Token())
	second.Unlock(ctx)
	// Output:
	// busy: true
	// token increased: true
}
