//go:build redlock_redigo

package auto

import (
	"context"
	"errors"

	"github.com/gomodule/redigo/redis"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/drivers/redigo"
)

// Name is the name of the driver Open returns; its Name method returns it.
const Name = "redigo"

// Open returns a redigo driver for the Redis node at addr ("host:port")
// over a new *redis.Pool, which connects at first use. Closing the driver
// closes the pool. Redigo speaks RESP2: use core.WithWaitStrategy(core.Poll).
func Open(addr string) (driver.Driver, error) {
	pool := &redis.Pool{
		MaxIdle: 16,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialContext(ctx, "tcp", addr)
		},
	}
	d, err := redigo.New(pool)
	if err != nil {
		return nil, errors.Join(err, pool.Close())
	}
	return &owned{Driver: d, pool: pool}, nil
}

// owned is the driver with the pool Open made, which its Close closes.
type owned struct {
	*redigo.Driver
	pool *redis.Pool
}

// Close closes the driver and then its pool.
func (o *owned) Close() error { return errors.Join(o.Driver.Close(), o.pool.Close()) }
