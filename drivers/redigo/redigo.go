// Package redigo is the redlock driver for github.com/gomodule/redigo.
// Redigo speaks only RESP2, so it cannot wait by keyspace notifications:
// use it with core.WithWaitStrategy(core.Poll). Redigo has no cluster
// client; use goredis or rueidis for a Redis Cluster.
//
//	d, err := redigo.New(&redis.Pool{Dial: func() (redis.Conn, error) {
//		return redis.Dial("tcp", "localhost:6379")
//	}})
//
// It is a module of its own, which requires redigo and no other client:
//
//	go get github.com/redlockgo/redlock/drivers/redigo
//
// Its operation methods are generated (zz_generated.go); this file holds
// only what cannot be.
package redigo

import (
	"errors"
	"fmt"

	"github.com/gomodule/redigo/redis"
	"github.com/redlockgo/redlock/driver"
)

// Driver runs redlock's operations through a redigo pool.
type Driver struct {
	pool *redis.Pool
}

// New returns a driver over pool, which the application keeps owning and
// closing. It fails with driver.ErrInvalid when pool is nil.
func New(pool *redis.Pool) (*Driver, error) {
	if pool == nil {
		return nil, fmt.Errorf("%w: redigo.New: pool is nil", driver.ErrInvalid)
	}
	return &Driver{pool: pool}, nil
}

// IsServerError reports whether err is a reply from the server.
func (d *Driver) IsServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// Name returns "redigo".
func (d *Driver) Name() string { return "redigo" }

// Protocol returns 2: redigo speaks only RESP2.
func (d *Driver) Protocol() int { return 2 }

// Close does nothing: the driver opens no connections of its own.
func (d *Driver) Close() error { return nil }

// SingleServer returns true: a redigo pool dials one server.
func (d *Driver) SingleServer() bool { return true }
