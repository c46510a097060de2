//go:build !redlock_redigo && !redlock_rueidis

package auto

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// Name is the name of the driver Open returns; its Name method returns it.
const Name = "goredis"

// Open returns a go-redis driver for the Redis node at addr ("host:port")
// over a new *redis.Client, which connects at first use. Closing the driver
// closes the client.
func Open(addr string) (driver.Driver, error) {
	client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	d, err := goredis.New(client)
	if err != nil {
		return nil, errors.Join(err, client.Close())
	}
	return &owned{Driver: d, client: client}, nil
}

// owned is the driver with the client Open made, which its Close closes.
type owned struct {
	*goredis.Driver
	client *redis.Client
}

// Close closes the driver and then its client.
func (o *owned) Close() error { return errors.Join(o.Driver.Close(), o.client.Close()) }
