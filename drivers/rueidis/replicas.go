package rueidis

import (
	"context"
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
		nodes, err := d.client.Do(ctx, d.client.B().ClusterNodes().Build()).ToString()
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
	var acked int64
	err := d.client.Dedicated(func(c rueidis.DedicatedClient) error {
		rs := c.DoMulti(ctx,
			c.B().Set().Key(marker).Value("").Px(time.Millisecond).Build(),
			c.B().Wait().Numreplicas(int64(n)).Timeout(max(timeout.Milliseconds(), 1)).Build())
		if err := rs[0].Error(); err != nil {
			return err
		}
		var err error
		acked, err = rs[1].AsInt64()
		return err
	})
	return int(acked), err
}
