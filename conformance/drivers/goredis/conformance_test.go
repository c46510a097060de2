package goredis_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance"
	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/drivers/goredis"
)

func harness(name string, protocol int) conformance.Harness {
	openAs := func(t testing.TB, addr, user, password string) driver.Driver {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: password, Protocol: protocol, ContextTimeoutEnabled: true})
		t.Cleanup(func() { rdb.Close() })
		d, err := goredis.New(rdb)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return conformance.Harness{
		Driver:  name,
		Open:    func(t testing.TB, addr string) driver.Driver { return openAs(t, addr, "", "") },
		OpenAs:  openAs,
		OpenNil: func() (driver.Driver, error) { return goredis.New(nil) },
		OpenCluster: func(t testing.TB, seeds []string) driver.Driver {
			rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, Protocol: protocol, ContextTimeoutEnabled: true})
			t.Cleanup(func() { rdb.Close() })
			// A new cluster client loads the slot map and the command table
			// and dials each master on first use: under -race that can take
			// longer than the node timeout of the cases with short TTLs.
			ctx := context.Background()
			rdb.Exists(ctx, "redlock:warm-up")
			rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
			d, err := goredis.New(rdb)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
	}
}

func TestConformance(t *testing.T) { conformance.Run(t, harness("goredis", 3)) }

// TestConformanceRESP2 is go-redis set to Protocol 2: Notify must fail fast,
// and replies decode as RESP2 ones, on one node and on a Cluster.
func TestConformanceRESP2(t *testing.T) {
	h := harness("goredis", 2)
	h.DecodingOf = "go-redis on RESP3"
	conformance.Run(t, h)
}
