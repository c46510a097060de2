package redigo_test

import (
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockgo/redlock/conformance"
	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/drivers/redigo"
)

func TestConformance(t *testing.T) {
	conformance.Run(t, conformance.Harness{
		Driver: "redigo",
		Open: func(t testing.TB, addr string) driver.Driver {
			pool := &redis.Pool{MaxIdle: 16, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
			t.Cleanup(func() { pool.Close() })
			d, err := redigo.New(pool)
			if err != nil {
				t.Fatal(err)
			}
			return d
		},
		OpenNil: func() (driver.Driver, error) { return redigo.New(nil) },
		// OpenCluster is nil: redigo has no Redis Cluster client.
	})
}
