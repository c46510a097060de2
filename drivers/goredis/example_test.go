package goredis_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// One node through go-redis: the README's go-redis example.
func Example() {
	srv, err := miniredis.Run() // an in-process Redis stands in for a real one
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	addr := srv.Addr() // for example "localhost:6379"

	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	defer rdb.Close() // the driver never closes the client you pass it
	d, err := goredis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	// Notify, the default, needs keyspace notifications, which miniredis lacks.
	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	lease, err := c.Mutex("invoice:42").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Unlock(ctx)
	fmt.Println("held, token > 0:", lease.Token() > 0)

	// Output:
	// held, token > 0: true
}
