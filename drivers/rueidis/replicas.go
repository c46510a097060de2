package rueidis

import (
	"context"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redis/rueidis"
	"github.com/redlockgo/redlock/driver"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

var _ driver.Replicated = (*Driver)(nil)

// Replicas counts the replicas: by CLUSTER NODES on a cluster, by INFO
// replication on one server.
func (d *Driver) Replicas(ctx context.Context) (driver.Replicas, error) {
	if d.cluster() {
		// rueidis sends a command without a key to any node, replicas
		// too, and a paused replica is what this count must survive: ask
		// the master of a random slot, as go-redis does.
		cmd := d.client.B().ClusterNodes().Build().SetSlot(strconv.Itoa(rand.Int()))
		nodes, err := d.client.Do(ctx, cmd).ToString()
		if err != nil {
			return driver.Replicas{}, err
		}
		return adapter.ParseClusterNodes(nodes)
	}
	info, err := d.client.Do(ctx, d.client.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		return driver.Replicas{}, err
	}
	return adapter.ParseReplication(info)
}

// WaitReplicas writes marker and sends WAIT on a dedicated connection to
// the master of marker's slot: rueidis would otherwise pipeline WAIT,
// which has no key, on any connection, or to any node of a cluster.
func (d *Driver) WaitReplicas(ctx context.Context, marker string, n int, timeout time.Duration) (int, error) {
	acked, err := waitOn(ctx, d.client, false, marker, n, timeout)
	if target, ask, ok := adapter.Redirect(err); ok && ask && d.cluster() {
		return d.waitMigrating(ctx, err, target, marker, n, timeout)
	}
	return acked, err
}

// waitOn writes marker and sends WAIT on one dedicated connection of c,
// after ASKING when asking.
func waitOn(ctx context.Context, c rueidis.Client, asking bool, marker string, n int, timeout time.Duration) (int, error) {
	var acked int64
	err := c.Dedicated(func(c rueidis.DedicatedClient) error {
		cmds := rueidis.Commands{
			c.B().Set().Key(marker).Value("").Px(time.Millisecond).Build(),
			c.B().Wait().Numreplicas(int64(n)).Timeout(max(timeout.Milliseconds(), 1)).Build(),
		}
		if asking {
			cmds = append(rueidis.Commands{c.B().Asking().Build()}, cmds...)
		}
		rs := c.DoMulti(ctx, cmds...)
		if err := rs[len(rs)-2].Error(); err != nil {
			return err
		}
		var err error
		acked, err = rs[len(rs)-1].AsInt64()
		return err
	})
	return int(acked), err
}
