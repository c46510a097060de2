package goredis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/driver"
)

// listenCluster listens on every master of the cluster, each with a
// PubSub of its own: a master publishes only its own keys' events (see
// driver.ListenEach).
func (d *Driver) listenCluster(ctx context.Context, cc *redis.ClusterClient, deliver func(channel, payload string)) (driver.Listener, error) {
	return driver.ListenEach(ctx, func(ctx context.Context) (map[string]driver.ListenFunc, error) {
		var mu sync.Mutex
		nodes := map[string]driver.ListenFunc{}
		err := cc.ForEachMaster(ctx, func(_ context.Context, master *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes[master.Options().Addr] = (&Driver{client: master, protocol: d.protocol}).Listen
			return nil
		})
		return nodes, err
	}, deliver)
}
