package rueidis_test

import (
	"context"
	"fmt"
	"log"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/core"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

// One node through rueidis: the README's rueidis example. The driver's
// package is named like the client's, hence the import name.
func Example() {
	ctx := context.Background()
	// redlock does not use rueidis' client-side cache.
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close() // the driver never closes the client you pass it
	d, err := rueidisdriver.New(client)
	if err != nil {
		log.Fatal(err)
	}
	c, err := core.New([]core.Driver{d})
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
