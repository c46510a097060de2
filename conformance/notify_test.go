package conformance

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/drivers/goredis"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
	"github.com/redlockgo/redlock/internal/testenv"
)

// TestConfigRefused runs testConfigRefused for the drivers that speak
// RESP3, with their clients logged in as an ACL user, until Harness can
// open such a driver itself (proposed: Harness.OpenAuth).
func TestConfigRefused(t *testing.T) {
	addr := testenv.Nodes(t)[0]
	t.Run("goredis", func(t *testing.T) {
		testConfigRefused(t, Harness{Driver: "goredis"}, func(t testing.TB, addr, user, pass string) driver.Driver {
			c := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: pass, ContextTimeoutEnabled: true})
			t.Cleanup(func() { c.Close() })
			d, _ := goredis.New(c)
			return d
		}, addr)
	})
	t.Run("rueidis", func(t *testing.T) {
		testConfigRefused(t, Harness{Driver: "rueidis"}, func(t testing.TB, addr, user, pass string) driver.Driver {
			c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: user, Password: pass})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			d, _ := rueidisdriver.New(c)
			return d
		}, addr)
	})
}
