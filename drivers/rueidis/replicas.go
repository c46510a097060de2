package rueidis

import (
	"context"
	"time"

	"github.com/redis/rueidis"
	"github.com/redlockgo/redlock/driver"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

var _ driver.Replicated = (*Driver)(nil)

// Replicas returns the fewest replicas a master has: by CLUSTER SLOTS on a
// cluster, by INFO replication on one server.
func (d *Driver) Replicas(ctx context.Context) (int, string, error) {
	if d.cluster() {
		slots, err := d.client.Do(ctx, d.client.B().ClusterSlots().Build()).ToArray()
		if err != nil {
			return 0, "", err
		}
		fewest := -1
		for _, s := range slots {
			fields, err := s.ToArray()
			if err != nil {
				return 0, "", err
			}
			// start, end, the master, then one entry per replica
			if r := len(fields) - 3; fewest < 0 || r < fewest {
				fewest = r
			}
		}
		return max(fewest, 0), "", nil
	}
	info, err := d.client.Do(ctx, d.client.B().Info().Section("replication").Build()).ToString()
	if err != nil {
		return 0, "", err
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
