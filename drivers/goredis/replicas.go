package goredis

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/driver"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

var _ driver.Replicated = (*Driver)(nil)

// Replicas counts the replicas: by CLUSTER NODES on a cluster client,
// by INFO replication on a *redis.Client, and none on a Ring, whose
// shards fail over by being replaced, not promoted.
func (d *Driver) Replicas(ctx context.Context) (driver.Replicas, error) {
	switch c := d.client.(type) {
	case *redis.ClusterClient:
		nodes, err := c.ClusterNodes(ctx).Result()
		d.sent(err)
		if err != nil {
			return driver.Replicas{}, err
		}
		return adapter.ParseClusterNodes(nodes)
	case *redis.Client:
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return driver.Replicas{}, err
		}
		return adapter.ParseReplication(info)
	}
	return driver.Replicas{}, nil
}

// WaitReplicas writes marker and sends WAIT on one connection to the
// master of marker's slot: a pipeline of a *redis.Client runs on one
// connection; a cluster client's would send WAIT, which has no key, to
// any node.
func (d *Driver) WaitReplicas(ctx context.Context, marker string, n int, timeout time.Duration) (int, error) {
	var c redis.Cmdable
	switch cc := d.client.(type) {
	case *redis.ClusterClient:
		m, err := cc.MasterForKey(ctx, marker)
		if err != nil {
			d.sent(err)
			return 0, err
		}
		c = m
	case *redis.Client:
		c = cc
	default:
		return 0, fmt.Errorf("%w: goredis: WAIT needs a *redis.Client or a *redis.ClusterClient, not a %T", driver.ErrInvalid, d.client)
	}
	var wait *redis.Cmd
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, marker, "", time.Millisecond)
		wait = p.Do(ctx, "wait", n, max(timeout.Milliseconds(), 1))
		return nil
	})
	d.sent(err)
	if err != nil {
		return 0, err
	}
	acked, err := wait.Int()
	return acked, err
}
