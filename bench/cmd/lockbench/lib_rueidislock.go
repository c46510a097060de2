package main

import (
	"context"
	"sync/atomic"

	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
)

// rueidislock with its defaults (a majority of 3 keys, woken by
// client-side caching's invalidations), but a TTL as the others'.
func rueidislockDefaults() library {
	return library{"rueidislock", "rueidislock", func(addrs []string, sent *atomic.Int64) (locker, error) {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{
			ClientOption: rueidis.ClientOption{InitAddress: addrs[:1]},
			KeyValidity:  ttl,
			ClientBuilder: func(o rueidis.ClientOption) (rueidis.Client, error) {
				c, err := rueidis.NewClient(o)
				if err != nil {
					return nil, err
				}
				return rueidisCounter{c, sent}, nil
			},
		})
		if err != nil {
			return nil, err
		}
		return rueidislockLocker{l}, nil
	}, false}
}

type rueidislockLocker struct{ l rueidislock.Locker }

func (l rueidislockLocker) lock(ctx context.Context, key string) (func(context.Context) error, error) {
	_, cancel, err := l.l.WithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	// cancel releases the keys and returns once they are released.
	return func(context.Context) error { cancel(); return nil }, nil
}

func (l rueidislockLocker) close() { l.l.Close() }
