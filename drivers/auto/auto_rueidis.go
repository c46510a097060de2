//go:build redlock_rueidis && !redlock_redigo

package auto

import (
	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/driver"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

// Name is the name of the driver Open returns; its Name method returns it.
const Name = "rueidis"

// Open returns a rueidis driver for the Redis node at addr ("host:port")
// over a new rueidis.Client. Unlike the other two clients, rueidis connects
// at once, so Open fails when the server cannot be reached. Client-side
// caching, which redlock does not use, is off, so servers without CLIENT
// TRACKING work too. Closing the driver closes the client.
func Open(addr string) (driver.Driver, error) {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return nil, err
	}
	d, err := rueidisdriver.New(client)
	if err != nil {
		client.Close()
		return nil, err
	}
	return &owned{Driver: d, client: client}, nil
}

// owned is the driver with the client Open made, which its Close closes.
type owned struct {
	*rueidisdriver.Driver
	client rueidis.Client
}

// Close closes the driver and then its client.
func (o *owned) Close() error {
	err := o.Driver.Close()
	o.client.Close()
	return err
}
