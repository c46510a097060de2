package redigo_test

import (
	"context"
	"fmt"
	"log"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/redigo"
)

// One node through a redigo pool: the README's redigo example. redigo
// speaks RESP2 only, so waiters poll.
func Example() {
	ctx := context.Background()
	pool := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		return redis.DialContext(ctx, "tcp", addr)
	}}
	defer pool.Close() // the driver never closes the pool you pass it
	d, err := redigo.New(pool)
	if err != nil {
		log.Fatal(err)
	}
	// redigo speaks RESP2, and Notify, the default, needs RESP3: waiters poll.
	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

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
