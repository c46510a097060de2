package goredis_test

import (
	"cmp"
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// Every primitive comes from one Client: the README's list.
func Example_primitives() {
	c, stop := exampleClient()
	defer stop()

	m := c.Mutex("invoice:42", core.WithTTL(30*time.Second)) // Lock, TryLock
	fair := c.FairMutex("payouts")                           // Lock, TryLock
	rw := c.RWMutex("catalog")                               // RLock, TryRLock, Lock, TryLock
	sem := c.Semaphore("pdf-renderers", 3)                   // Acquire(ctx, n), TryAcquire(ctx, n), Release, Extend
	latch := c.Latch("migration")                            // TrySetCount, CountDown, Count, Wait, Delete
	multi := c.MultiLock([]string{"account:3", "account:7"}) // Lock, TryLock: all names or none

	fmt.Println(m.Name(), fair.Name(), rw.Name(), sem.Name(), latch.Name(), multi.Names())
	// Output: invoice:42 payouts catalog pdf-renderers migration [account:3 account:7]
}

// buildReport stands for the work done under the lock.
func buildReport(ctx context.Context) error { return ctx.Err() }

// core.Do holds a Mutex while the function runs: the README's example.
func Example_doReport() {
	c, stop := exampleClient()
	defer stop()
	ctx := context.Background()

	err := core.Do(ctx, c.Mutex("nightly-report"), func(ctx context.Context) error {
		return buildReport(ctx) // ctx is cancelled if the lock is lost
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("report built")
	// Output: report built
}

// quorumAddrs are the independent masters of the quorum example: the first
// three of REDLOCK_TEST_NODES, or addr alone.
var quorumAddrs = func() []string {
	nodes := strings.Split(os.Getenv("REDLOCK_TEST_NODES"), ",")
	if len(nodes) >= 3 {
		return nodes[:3]
	}
	return []string{cmp.Or(nodes[0], addr)}
}()

// A Redlock quorum: one driver per independent master. The README's
// example, which names three servers.
func Example_quorum() {
	ctx := context.Background()
	var drivers []core.Driver
	for _, addr := range quorumAddrs {
		rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		defer rdb.Close()
		d, err := goredis.New(rdb)
		if err != nil {
			log.Fatal(err)
		}
		drivers = append(drivers, d)
	}
	c, err := core.New(drivers)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	lease, err := c.Mutex("invoice:42").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held on a majority:", lease.Token() > 0)
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: held on a majority: true
}

// Options given to New are the Client's defaults; given to a primitive,
// they override them: docs/options.md's example.
func Example_options() {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close()
	d, err := goredis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	c, err := core.New([]core.Driver{d}, core.WithTTL(30*time.Second), core.WithLogger(logger))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	m := c.Mutex("invoice:42", core.WithTTL(time.Minute), core.WithAutoExtend())

	fmt.Println(m.Name())
	// Output: invoice:42
}
