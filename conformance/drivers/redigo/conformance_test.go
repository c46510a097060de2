package redigo_test

import (
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockgo/redlock/conformance"
	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/drivers/redigo"
)

func TestConformance(t *testing.T) {
	openAs := func(t testing.TB, addr, user, password string) driver.Driver {
		dial := func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialUsername(user), redis.DialPassword(password)) // no AUTH when ""
		}
		pool := &redis.Pool{MaxIdle: 16, Dial: dial}
		t.Cleanup(func() { pool.Close() })
		d, err := redigo.New(pool)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	conformance.Run(t, conformance.Harness{
		Driver:  "redigo",
		Open:    func(t testing.TB, addr string) driver.Driver { return openAs(t, addr, "", "") },
		OpenAs:  openAs,
		OpenNil: func() (driver.Driver, error) { return redigo.New(nil) },
		// OpenCluster is nil: redigo has no Redis Cluster client.
	})
}
