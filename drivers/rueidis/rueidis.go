// Package rueidis is the redlock driver for github.com/redis/rueidis. Its
// name is the client's, so import it under another name:
//
//	import (
//		"github.com/redis/rueidis"
//		rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
//	)
//
//	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{"localhost:6379"}})
//	d, err := rueidisdriver.New(client)
//
// A rueidis client for a Redis Cluster works as is.
//
// It is a module of its own, which requires rueidis and no other client:
//
//	go get github.com/redlockgo/redlock/drivers/rueidis
//
// The operation methods are generated (zz_generated.go); this file holds
// only what cannot be.
package rueidis

import (
	"errors"
	"fmt"

	"github.com/redis/rueidis"
	"github.com/redlockgo/redlock/driver"
)

// Driver runs redlock's operations through a rueidis client.
type Driver struct {
	client rueidis.Client
}

// New returns a driver over client, which the application keeps owning and
// closing. It fails with driver.ErrInvalid when client is nil.
func New(client rueidis.Client) (*Driver, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: rueidis.New: client is nil", driver.ErrInvalid)
	}
	return &Driver{client: client}, nil
}

// IsServerError reports whether err is a reply from the server.
func (d *Driver) IsServerError(err error) bool {
	var re *rueidis.RedisError
	return errors.As(err, &re) && !re.IsNil()
}

// Name returns "rueidis".
func (d *Driver) Name() string { return "rueidis" }

// Protocol returns 3: rueidis speaks RESP3.
func (d *Driver) Protocol() int { return 3 }

// Close does nothing yet: the driver opens no connections of its own.
func (d *Driver) Close() error { return nil }

// SingleServer reports whether the client talks to one node, or to a
// master found through Sentinel, rather than to a Redis Cluster.
func (d *Driver) SingleServer() bool {
	m := d.client.Mode()
	return m == rueidis.ClientModeStandalone || m == rueidis.ClientModeSentinel
}
