package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// redsync's own retry: 32 tries, 50–250 ms apart; or 10 ms apart.
func redsyncDefaults() library { return redsyncWith("redsync", "redsync", nil) }

func redsyncDelay10ms() library {
	return redsyncWith("redsync-10ms", "redsync 10ms delay", []redsync.Option{redsync.WithRetryDelay(10 * time.Millisecond)})
}

type redsyncLocker struct {
	rs   *redsync.Redsync
	opts []redsync.Option
	done func()
}

func redsyncWith(id, name string, opts []redsync.Option) library {
	return library{id, name, func(addrs []string, sent *atomic.Int64) (locker, error) {
		var (
			pools []redsyncredis.Pool
			rdbs  []*redis.Client
		)
		for _, a := range addrs {
			rdb := goredisClient(a, sent)
			pools, rdbs = append(pools, goredis.NewPool(rdb)), append(rdbs, rdb)
		}
		return redsyncLocker{redsync.New(pools...), append(opts, redsync.WithExpiry(ttl)), func() {
			for _, rdb := range rdbs {
				rdb.Close()
			}
		}}, nil
	}, true}
}

func (l redsyncLocker) lock(ctx context.Context, key string) (func(context.Context) error, error) {
	m := l.rs.NewMutex(key, l.opts...)
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { _, err := m.UnlockContext(ctx); return err }, nil
}

func (l redsyncLocker) close() { l.done() }
