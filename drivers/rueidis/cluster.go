package rueidis

import (
	"context"

	"github.com/redis/rueidis"
	"github.com/redlockgo/redlock/driver"
)

// listenCluster listens on every node the cluster client knows, each on a
// dedicated connection of its own: a node publishes only its own keys'
// events (see driver.ListenEach). rueidis does not tell masters from
// replicas here, so replicas are subscribed too; they publish the events
// of what they replicate, which wakes a waiter at most once more.
func (d *Driver) listenCluster(ctx context.Context, deliver func(channel, payload string)) (driver.Listener, error) {
	return driver.ListenEach(ctx, func(context.Context) (map[string]driver.ListenFunc, error) {
		nodes := map[string]driver.ListenFunc{}
		for addr, c := range d.client.Nodes() {
			nodes[addr] = (&Driver{client: c}).Listen
		}
		return nodes, nil
	}, deliver)
}

// cluster reports whether the client talks to a Redis Cluster.
func (d *Driver) cluster() bool { return d.client.Mode() == rueidis.ClientModeCluster }
