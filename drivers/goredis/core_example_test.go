package goredis_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// exampleClient is a Client over the examples' server (addr); stop closes
// it and its go-redis client.
func exampleClient() (c *core.Client, stop func()) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	d, err := goredis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	// A prefix of its own, so that what a run leaves (a latch set again)
	// does not meet the next run.
	c, err = core.New([]core.Driver{d}, core.WithKeyPrefix("example:"+rand.Text()+":"))
	if err != nil {
		log.Fatal(err)
	}
	return c, func() { c.Close(); rdb.Close() }
}

// core.Mutex.TryLock makes one attempt: while another lease holds the
// lock it fails with ErrNotAcquired. Fencing tokens increase with every
// acquisition.
func Example_mutexTryLock() {
	c, stop := exampleClient()
	defer stop()

	ctx := context.Background()
	m := c.Mutex("invoice:43")
	lease, err := m.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	first := lease.Token()

	_, err = m.TryLock(ctx)
	fmt.Println("second attempt:", errors.Is(err, core.ErrNotAcquired))

	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	lease, err = m.TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)
	fmt.Println("after Unlock, a larger token:", lease.Token() > first)

	// Output:
	// second attempt: true
	// after Unlock, a larger token: true
}

// core.Do holds the lock while the function runs, extending it as needed, and
// releases it when the function returns.
func Example_do() {
	c, stop := exampleClient()
	defer stop()

	ctx := context.Background()
	err := core.Do(ctx, c.Mutex("nightly-report"), func(ctx context.Context) error {
		// ctx is cancelled if the lock is lost; pass it to the work.
		_, err := c.Mutex("nightly-report").TryLock(ctx)
		fmt.Println("held during Do:", errors.Is(err, core.ErrNotAcquired))
		return nil
	})
	fmt.Println("Do returned:", err)

	lease, err := c.Mutex("nightly-report").TryLock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)
	fmt.Println("free after Do:", lease.Token() > 0)

	// Output:
	// held during Do: true
	// Do returned: <nil>
	// free after Do: true
}
