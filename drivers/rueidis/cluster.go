package rueidis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/redis/rueidis"
	"github.com/redlockgo/redlock/driver"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

// listenCluster listens on every node the cluster client knows, each on a
// dedicated connection of its own: a node publishes only its own keys'
// events (see adapter.ListenEach). rueidis does not tell masters from
// replicas here, so replicas are subscribed too; they publish the events
// of what they replicate, which wakes a waiter at most once more. rueidis
// forgets a node only when a redirection makes it reload the slots, so the
// nodes the cluster itself no longer lists (CLUSTER SLOTS: a node removed,
// a replica failed) are left out.
func (d *Driver) listenCluster(ctx context.Context, deliver func(channel, payload string)) (driver.Listener, error) {
	return adapter.ListenEach(ctx, func(ctx context.Context) (map[string]adapter.ListenFunc, error) {
		listed := d.listed(ctx)
		nodes := map[string]adapter.ListenFunc{}
		for addr, c := range d.client.Nodes() {
			if listed == nil || listed[addr] {
				nodes[addr] = (&Driver{client: c}).Listen
			}
		}
		return nodes, nil
	}, d.owner, deliver)
}

// owner returns the master that serves channel's slot, from the cluster
// asked now: the client's own map lags behind a slot that moved.
func (d *Driver) owner(ctx context.Context, channel string) (string, error) {
	slot, err := d.client.Do(ctx, d.client.B().ClusterKeyslot().Key(channel).Build()).AsInt64()
	if err != nil {
		return "", err
	}
	slots, err := d.client.Do(ctx, d.client.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return "", err
	}
	for _, s := range slots {
		if fields, err := s.ToArray(); err == nil && len(fields) >= 3 {
			from, err1 := fields[0].AsInt64()
			to, err2 := fields[1].AsInt64()
			if addr, err3 := nodeAddr(fields[2]); err1 == nil && err2 == nil && err3 == nil && from <= slot && slot <= to {
				return addr, nil
			}
		}
	}
	return "", fmt.Errorf("rueidis: no master serves slot %d", slot)
}

// nodeAddr is the address of a node as CLUSTER SLOTS lists it.
func nodeAddr(m rueidis.RedisMessage) (string, error) {
	node, err := m.ToArray()
	if err != nil || len(node) < 2 {
		return "", fmt.Errorf("rueidis: CLUSTER SLOTS lists a node as %v", m)
	}
	host, err1 := node[0].ToString()
	port, err2 := node[1].AsInt64()
	if err := errors.Join(err1, err2); err != nil {
		return "", err
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10)), nil
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
			addr, err := nodeAddr(f)
			if err != nil {
				return nil
			}
			addrs[addr] = true
		}
	}
	return addrs
}

// cluster reports whether the client talks to a Redis Cluster.
func (d *Driver) cluster() bool { return d.client.Mode() == rueidis.ClientModeCluster }
