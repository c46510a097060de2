package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
)

// bsm/redislock retries by its Options' strategy until the TTL passed,
// then gives up.
func redislockLinear() library {
	return redislockWith("redislock-linear", "bsm/redislock linear 10ms", func() redislock.RetryStrategy {
		return redislock.LinearBackoff(10 * time.Millisecond)
	})
}

func redislockExponential() library {
	return redislockWith("redislock-exp", "bsm/redislock exponential 16ms–1s", func() redislock.RetryStrategy {
		return redislock.ExponentialBackoff(16*time.Millisecond, time.Second)
	})
}

type redislockLocker struct {
	c     *redislock.Client
	retry func() redislock.RetryStrategy
	done  func() error
}

func redislockWith(id, name string, retry func() redislock.RetryStrategy) library {
	return library{id, name, func(addrs []string, sent *atomic.Int64) (locker, error) {
		rdb := goredisClient(addrs[0], sent)
		return redislockLocker{redislock.New(rdb), retry, rdb.Close}, nil
	}, false}
}

func (l redislockLocker) lock(ctx context.Context, key string) (func(context.Context) error, error) {
	// Obtain given a context without a deadline gives up after the TTL.
	ctx, cancel := context.WithTimeout(ctx, ttl)
	defer cancel()
	// A strategy counts its retries: a fresh one for every Obtain.
	lock, err := l.c.Obtain(ctx, key, ttl, &redislock.Options{RetryStrategy: l.retry()})
	if err != nil {
		return nil, err
	}
	return lock.Release, nil
}

func (l redislockLocker) close() { l.done() }
