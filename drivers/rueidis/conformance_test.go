package rueidis_test

import (
	"testing"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/conformance"
	"github.com/redlockgo/redlock/driver"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Driver: "rueidis",
		Open: func(t testing.TB, addr string) driver.Driver {
			client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true})
			if err != nil {
				// A node that is down: a client that fails every call stands in.
				client, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableRetry: true, ForceSingleClient: true})
				if err != nil {
					t.Fatal(err)
				}
			}
			t.Cleanup(client.Close)
			d, err := rueidisdriver.New(client)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		OpenNil: func() (driver.Driver, error) { return rueidisdriver.New(nil) },
	})
}
