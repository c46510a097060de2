package auto_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/auto"
)

// addr is the Redis server the example uses: the first of
// REDLOCK_TEST_NODES, or localhost:6379.
var addr = cmp.Or(strings.Split(os.Getenv("REDLOCK_TEST_NODES"), ",")[0], "localhost:6379")

// The driver chosen at build time: the README's drivers/auto example.
// Poll works with every driver, redigo's included.
func Example() {
	ctx := context.Background()
	d, err := auto.Open(addr) // (no tag): goredis; -tags redlock_redigo; -tags redlock_rueidis
	if err != nil {
		log.Fatal(err)
	}
	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
	if err != nil {
		log.Fatal(errors.Join(err, d.Close())) // no Client owns d yet: close it here
	}
	defer c.Close() // also closes the client that auto.Open made

	lease, err := c.Mutex("invoice:42").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("held, token > 0:", lease.Token() > 0)
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	// Output:
	// held, token > 0: true
}
