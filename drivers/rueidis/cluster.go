package rueidis

import (
	"context"
	"net"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/redlockgo/redlock/driver"
)

// listenCluster listens on every node the cluster client knows, each on a
// dedicated connection of its own: a node publishes only its own keys'
// events (see driver.ListenEach). rueidis does not tell masters from
// replicas here, so replicas are subscribed too; they publish the events
// of what they replicate, which wakes a waiter at most once more. rueidis
// forgets a node only when a redirection makes it reload the slots, so the
// nodes the cluster itself no longer lists (CLUSTER SLOTS: a node removed,
// a replica failed) are left out.
func (d *Driver) listenCluster(ctx context.Context, deliver func(channel, payload string)) (driver.Listener, error) {
	return driver.ListenEach(ctx, func(ctx context.Context) (map[string]driver.ListenFunc, error) {
		listed := d.listed(ctx)
		nodes := map[string]driver.ListenFunc{}
		for addr, c := range d.client.Nodes() {
			if listed == nil || listed[addr] {
				nodes[addr] = (&Driver{client: c}).Listen
			}
		}
		return nodes, nil
	}, deliver)
}

// listed returns the addresses CLUSTER SLOTS lists, masters and replicas;
// nil when the cluster did not answer.
func (d *Driver) listed(ctx context.Context) map[string]bool {
	slots, err := d.client.Do(ctx, d.client.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil
	}
	addrs := map[string]bool{}
	for _, s := range slots {
		fields, err := s.ToArray()
		if err != nil || len(fields) < 3 {
			return nil
		}
		for _, f := range fields[2:] {
			node, err := f.ToArray()
			if err != nil || len(node) < 2 {
				return nil
			}
			host, err1 := node[0].ToString()
			port, err2 := node[1].AsInt64()
			if err1 != nil || err2 != nil {
				return nil
			}
			addrs[net.JoinHostPort(host, strconv.FormatInt(port, 10))] = true
		}
	}
	return addrs
}

// cluster reports whether the client talks to a Redis Cluster.
func (d *Driver) cluster() bool { return d.client.Mode() == rueidis.ClientModeCluster }
