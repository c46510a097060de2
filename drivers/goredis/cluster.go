package goredis

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/driver"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

// listenCluster listens on every master of the cluster, each with a
// PubSub of its own: a master publishes only its own keys' events (see
// adapter.ListenEach).
func (d *Driver) listenCluster(ctx context.Context, cc *redis.ClusterClient, deliver func(channel, payload string)) (driver.Listener, error) {
	return adapter.ListenEach(ctx, func(ctx context.Context) (map[string]adapter.ListenFunc, error) {
		var mu sync.Mutex
		nodes := map[string]adapter.ListenFunc{}
		err := cc.ForEachMaster(ctx, func(_ context.Context, master *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes[master.Options().Addr] = (&Driver{client: master, protocol: d.protocol}).Listen
			return nil
		})
		return nodes, err
	}, func(ctx context.Context, channel string) (string, error) {
		// The client's own map lags behind a slot that moved: ask again.
		cc.ReloadState(ctx)
		master, err := cc.MasterForKey(ctx, channel)
		if err != nil {
			return "", err
		}
		return master.Options().Addr, nil
	}, deliver)
}

// sent has a cluster client reload its map of the slots after a call whose
// connection could not be opened or broke: go-redis reloads it after a
// MOVED, but not when a master it knows died, so every call would go to
// the dead master, refused, until its next reload, long after the
// replica took over. go-redis reloads in the background, at most every
// 200ms however often it is asked.
func (d *Driver) sent(err error) {
	if cc, ok := d.client.(*redis.ClusterClient); ok && driver.IsBrokenConnection(err) {
		cc.ReloadState(context.Background())
	}
}
