package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
)

// ttl is the lease of every library: the lock's expiry where it has one,
// and the time bsm/redislock waits before it gives up.
const ttl = 5 * time.Second

// library is one contender: a lock library with one configuration.
type library struct {
	id, name string
	// open connects one Client (one process's worth of connections) to
	// addrs, independent masters; every command it sends on its own adds
	// to sent.
	open func(addrs []string, sent *atomic.Int64) (locker, error)
	// quorum says whether it takes a lock on several independent masters
	// (Redlock); one that does not is left out of runs on several nodes.
	quorum bool
}

// locker is one Client of a library.
type locker interface {
	// lock waits for key as the library waits, and returns its release.
	// An error is the library giving up (or failing).
	lock(ctx context.Context, key string) (unlock func(context.Context) error, err error)
	close()
}

// libraries are all contenders, in the order of the tables.
var libraries = []library{
	redlockGoredis("Notify"), redlockGoredis("Poll"),
	redlockRueidis("Notify"), redlockRueidis("Poll"),
	redlockRedigo(),
	redsyncDefaults(), redsyncDelay10ms(),
	redislockLinear(), redislockExponential(),
	rueidislockDefaults(),
}

// goredisCounter counts the commands a go-redis client sends (a pipeline's
// each); the connection's handshake is not counted.
type goredisCounter struct{ n *atomic.Int64 }

func (goredisCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c goredisCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c goredisCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

func goredisClient(addr string, sent *atomic.Int64) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	rdb.AddHook(goredisCounter{sent})
	return rdb
}

// rueidisCounter counts the commands a rueidis client sends; those of a
// dedicated connection (subscriptions) are not counted.
type rueidisCounter struct {
	rueidis.Client
	n *atomic.Int64
}

func (c rueidisCounter) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c rueidisCounter) DoMulti(ctx context.Context, cmds ...rueidis.Completed) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}

func (c rueidisCounter) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.n.Add(1)
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c rueidisCounter) DoMultiCache(ctx context.Context, cmds ...rueidis.CacheableTTL) []rueidis.RedisResult {
	c.n.Add(int64(len(cmds)))
	return c.Client.DoMultiCache(ctx, cmds...)
}
