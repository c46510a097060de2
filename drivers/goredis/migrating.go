package goredis

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	adapter "github.com/redlockgo/redlock/driver/adapter"
)

// waitMigrating waits for the replicas of both masters of a slot that
// migrates from source to target, as marker's write on source was
// answered ASK: a grant ran on source where its keys were still there,
// or on target after an ASK, so each master writes a marker and waits,
// and the fewer acknowledgements count. target takes marker after
// ASKING; source refuses a key of the slot it does not hold, so it takes
// a marker of a slot it serves.
func (d *Driver) waitMigrating(ctx context.Context, asked error, cc *redis.ClusterClient, source redis.Cmdable, target, marker string, n int, timeout time.Duration) (int, error) {
	to, err := master(ctx, cc, target)
	if err != nil || to == nil {
		return 0, cmp.Or(err, asked) // a master cc does not know yet: asked again
	}
	acked, err := d.waitOn(ctx, to, true, marker, n, timeout)
	if err != nil {
		return 0, err
	}
	for i := range adapter.MarkersBeside {
		there, err := d.waitOn(ctx, source, false, adapter.MarkerBeside(marker, i), n, timeout)
		if _, _, redirected := adapter.Redirect(err); !redirected {
			return min(acked, there), err
		}
	}
	return 0, fmt.Errorf("goredis: none of %d markers is in a slot the master migrating %q serves", adapter.MarkersBeside, marker)
}

// master returns cc's client of the master at addr, nil if none.
func master(ctx context.Context, cc *redis.ClusterClient, addr string) (*redis.Client, error) {
	var (
		mu    sync.Mutex
		found *redis.Client
	)
	err := cc.ForEachMaster(ctx, func(_ context.Context, m *redis.Client) error { // at once
		if m.Options().Addr == addr {
			mu.Lock()
			found = m
			mu.Unlock()
		}
		return nil
	})
	return found, err
}
