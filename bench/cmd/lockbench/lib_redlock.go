package main

import (
	"context"
	"strings"
	"sync/atomic"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
	redigodriver "github.com/redlockgo/redlock/drivers/redigo"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

// redlockLocker is this library's Client with its defaults but the TTL.
type redlockLocker struct {
	c    *core.Client
	done func()
}

func (l redlockLocker) lock(ctx context.Context, key string) (func(context.Context) error, error) {
	lease, err := l.c.Mutex(key, core.WithTTL(ttl)).Lock(ctx)
	if err != nil {
		return nil, err
	}
	return lease.Unlock, nil
}

func (l redlockLocker) close() { l.c.Close(); l.done() }

func wait(strategy string) core.WaitStrategy {
	if strategy == "Poll" {
		return core.Poll
	}
	return core.Notify
}

func redlockGoredis(strategy string) library {
	return library{"redlock-goredis-" + strings.ToLower(strategy), "redlock goredis " + strategy, func(addrs []string, sent *atomic.Int64) (locker, error) {
		return redlockOver(addrs, core.WithWaitStrategy(wait(strategy)), func(addr string) (core.Driver, func(), error) {
			rdb := goredisClient(addr, sent)
			d, err := goredis.New(rdb)
			return d, func() { rdb.Close() }, err
		})
	}, true}
}

func redlockRueidis(strategy string) library {
	return library{"redlock-rueidis-" + strings.ToLower(strategy), "redlock rueidis " + strategy, func(addrs []string, sent *atomic.Int64) (locker, error) {
		return redlockOver(addrs, core.WithWaitStrategy(wait(strategy)), func(addr string) (core.Driver, func(), error) {
			rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
			if err != nil {
				return nil, func() {}, err
			}
			d, err := rueidisdriver.New(rueidisCounter{rc, sent})
			return d, rc.Close, err
		})
	}, true}
}

// redlockRedigo is Poll only: redigo speaks RESP2, and Notify needs RESP3.
func redlockRedigo() library {
	return library{"redlock-redigo-poll", "redlock redigo Poll", func(addrs []string, sent *atomic.Int64) (locker, error) {
		return redlockOver(addrs, core.WithWaitStrategy(core.Poll), func(addr string) (core.Driver, func(), error) {
			pool := &redigo.Pool{MaxIdle: 4, Dial: func() (redigo.Conn, error) {
				c, err := redigo.Dial("tcp", addr)
				return redigoCounter{c, sent}, err
			}}
			d, err := redigodriver.New(pool)
			return d, func() { pool.Close() }, err
		})
	}, true}
}

// redlockOver is a Client over a driver to each of addrs.
func redlockOver(addrs []string, wait core.Option, driver func(addr string) (core.Driver, func(), error)) (locker, error) {
	var (
		ds    []core.Driver
		close []func()
	)
	done := func() {
		for _, c := range close {
			c()
		}
	}
	for _, a := range addrs {
		d, c, err := driver(a)
		close = append(close, c)
		if err != nil {
			done()
			return nil, err
		}
		ds = append(ds, d)
	}
	c, err := core.New(ds, wait)
	if err != nil {
		done()
		return nil, err
	}
	return redlockLocker{c, done}, nil
}

// redigoCounter counts the commands sent on a redigo connection.
type redigoCounter struct {
	redigo.Conn
	n *atomic.Int64
}

func (c redigoCounter) Do(cmd string, args ...any) (any, error) {
	if cmd != "" {
		c.n.Add(1)
	}
	return c.Conn.Do(cmd, args...)
}

func (c redigoCounter) Send(cmd string, args ...any) error {
	c.n.Add(1)
	return c.Conn.Send(cmd, args...)
}

func (c redigoCounter) DoContext(ctx context.Context, cmd string, args ...any) (any, error) {
	if cmd != "" {
		c.n.Add(1)
	}
	return redigo.DoContext(c.Conn, ctx, cmd, args...)
}

func (c redigoCounter) ReceiveContext(ctx context.Context) (any, error) {
	return redigo.ReceiveContext(c.Conn, ctx)
}
