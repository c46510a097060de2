// Package goredis is the redlock driver for github.com/redis/go-redis/v9.
// It takes any redis.UniversalClient: a *redis.Client for one node, or a
// *redis.ClusterClient for a Redis Cluster. The client must respect context
// deadlines (ContextTimeoutEnabled), or redlock's per-node timeouts could
// not bound a request to a slow node:
//
//	d, err := goredis.New(redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true}))
//
// It is a module of its own, which requires go-redis and no other client:
//
//	go get github.com/redlockgo/redlock/drivers/goredis
//
// Its package examples show each primitive of package core.
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
// closing. It fails with driver.ErrInvalid when client is nil or ignores
// context deadlines (ContextTimeoutEnabled unset in its options).
func New(client redis.UniversalClient) (*Driver, error) {
	protocol, deadlines, ok := optionsOf(client)
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: goredis.New: client is nil", driver.ErrInvalid)
	case !deadlines:
		return nil, fmt.Errorf("%w: goredis.New: the client ignores context deadlines, so a slow node could hold up every attempt for its ReadTimeout; set ContextTimeoutEnabled: true in its options", driver.ErrInvalid)
	}
	return &Driver{client: client, protocol: protocol}, nil
}

// optionsOf reads from the client's options the RESP version (go-redis
// speaks RESP3 unless Protocol is set to 2) and whether it respects context
// deadlines. It reports false for a nil client; a client of another type
// (a wrapper) is taken to speak RESP3 and respect deadlines.
func optionsOf(client redis.UniversalClient) (protocol int, deadlines, ok bool) {
	p, deadlines := 0, true
	switch c := client.(type) {
	case nil:
		return 0, false, false
	case *redis.Client:
		if c == nil {
			return 0, false, false
		}
		p, deadlines = c.Options().Protocol, c.Options().ContextTimeoutEnabled
	case *redis.ClusterClient:
		if c == nil {
			return 0, false, false
		}
		p, deadlines = c.Options().Protocol, c.Options().ContextTimeoutEnabled
	case *redis.Ring:
		if c == nil {
			return 0, false, false
		}
		p, deadlines = c.Options().Protocol, c.Options().ContextTimeoutEnabled
	}
	if p == 2 {
		return 2, deadlines, true
	}
	return 3, deadlines, true
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

// SingleServer reports whether the client is a *redis.Client (one node, or
// a master found through Sentinel), not a cluster client or a Ring.
func (d *Driver) SingleServer() bool {
	_, ok := d.client.(*redis.Client)
	return ok
}

// once is a command that go-redis must not send again: by default it
// sends a command again on another connection when the first one broke
// (io.EOF, a reset) before the reply came, although the server may have
// run it. A script that runs twice counts a Latch down twice or enters an
// owner's lock twice, so every call of the driver is sent at most once
// whatever the client's MaxRetries; a failure goes back to redlock, which
// knows what may have landed (and core sends again a call that the
// server refused without running it, see driver.IsTransient). Cluster
// redirections, MOVED and ASK, still follow. A go-redis hook sees these
// calls as this type, not as *redis.Cmd.
type once struct{ *redis.Cmd }

func (once) NoRetry() bool { return true }
