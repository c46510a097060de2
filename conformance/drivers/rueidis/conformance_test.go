package rueidis_test

import (
	"context"
	"testing"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/conformance"
	"github.com/redlockgo/redlock/driver"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

func TestConformance(t *testing.T) {
	openAs := func(t testing.TB, addr, user, password string) driver.Driver {
		// No client-side caching: redlock does not use it, and miniredis
		// has no CLIENT TRACKING, which it needs. A single-node client:
		// miniredis answers CLUSTER SLOTS with its own address, which
		// would have rueidis bypass the proxy of a case's node that is down.
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: user, Password: password,
			DisableRetry: true, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(client.Close)
		d, err := rueidisdriver.New(client)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	conformance.Run(t, conformance.Harness{
		Driver:  "rueidis",
		Open:    func(t testing.TB, addr string) driver.Driver { return openAs(t, addr, "", "") },
		OpenAs:  openAs,
		OpenNil: func() (driver.Driver, error) { return rueidisdriver.New(nil) },
		OpenCluster: func(t testing.TB, seeds []string) driver.Driver {
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, DisableRetry: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(client.Close)
			// Dial each node now: under -race a first dial can take longer
			// than the node timeout of the cases with short TTLs.
			for _, n := range client.Nodes() {
				n.Do(context.Background(), n.B().Ping().Build())
			}
			d, err := rueidisdriver.New(client)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	})
}
