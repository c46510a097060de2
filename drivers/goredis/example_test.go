package goredis_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// One node through go-redis: the README's go-redis example.
func Example() {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close() // the driver never closes the client you pass it
	d, err := goredis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	c, err := core.New([]core.Driver{d}) // sends nothing: works once Redis is up
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Ping(ctx); err != nil { // at start-up, to fail fast
		log.Fatal(err)
	}
	lease, err := c.Mutex("invoice:42").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	// Work while lease.Done() is open; send lease.Token() with every write.
	fmt.Println("held, token > 0:", lease.Token() > 0)
	if err := lease.Unlock(ctx); err != nil { // ErrLost: it was lost meanwhile
		log.Fatal(err)
	}

	// Output:
	// held, token > 0: true
}
