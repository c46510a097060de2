// Package goredis is the redlock driver for github.com/redis/go-redis/v9.
// It takes any redis.UniversalClient: a *redis.Client for one node, or a
// *redis.ClusterClient for a Redis Cluster.
//
//	d, err := goredis.New(redis.NewClient(&redis.Options{Addr: "localhost:6379"}))
//
// Its operation methods are generated (zz_generated.go); this file holds
// only what cannot be.
package goredis

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/driver"
)

// Driver runs redlock's operations through a go-redis client.
type Driver struct {
	client   redis.UniversalClient
	protocol int
}

// New returns a driver over client, which the application keeps owning and
// closing. It fails with driver.ErrInvalid when client is nil.
func New(client redis.UniversalClient) (*Driver, error) {
	protocol, ok := protocolOf(client)
	if !ok {
		return nil, fmt.Errorf("%w: goredis.New: client is nil", driver.ErrInvalid)
	}
	return &Driver{client: client, protocol: protocol}, nil
}

// protocolOf reads the RESP version from the client's options; go-redis
// speaks RESP3 unless Protocol is set to 2. It reports false for a nil client.
func protocolOf(client redis.UniversalClient) (int, bool) {
	p := 0
	switch c := client.(type) {
	case nil:
		return 0, false
	case *redis.Client:
		if c == nil {
			return 0, false
		}
		p = c.Options().Protocol
	case *redis.ClusterClient:
		if c == nil {
			return 0, false
		}
		p = c.Options().Protocol
	case *redis.Ring:
		if c == nil {
			return 0, false
		}
		p = c.Options().Protocol
	}
	if p == 2 {
		return 2, true
	}
	return 3, true
}

// IsServerError reports whether err is a reply from the server.
func (d *Driver) IsServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// Name returns "goredis".
func (d *Driver) Name() string { return "goredis" }

// Protocol returns 2 when the client was configured with Protocol 2, else 3.
func (d *Driver) Protocol() int { return d.protocol }

// Close does nothing yet: the driver opens no connections of its own.
func (d *Driver) Close() error { return nil }
