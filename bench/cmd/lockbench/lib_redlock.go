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
	return library{"redlock-goredis-" + strings.ToLower(strategy), "redlock goredis " + strategy, func(addr string, sent *atomic.Int64) (locker, error) {
		rdb := goredisClient(addr, sent)
		d, err := goredis.New(rdb)
		if err != nil {
			rdb.Close()
			return nil, err
		}
		c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(wait(strategy)))
		if err != nil {
			rdb.Close()
			return nil, err
		}
		return redlockLocker{c, func() { rdb.Close() }}, nil
	}}
}

func redlockRueidis(strategy string) library {
	return library{"redlock-rueidis-" + strings.ToLower(strategy), "redlock rueidis " + strategy, func(addr string, sent *atomic.Int64) (locker, error) {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			return nil, err
		}
		d, err := rueidisdriver.New(rueidisCounter{rc, sent})
		if err != nil {
			rc.Close()
			return nil, err
		}
		c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(wait(strategy)))
		if err != nil {
			rc.Close()
			return nil, err
		}
		return redlockLocker{c, rc.Close}, nil
	}}
}

// redlockRedigo is Poll only: redigo speaks RESP2, and Notify needs RESP3.
func redlockRedigo() library {
	return library{"redlock-redigo-poll", "redlock redigo Poll", func(addr string, sent *atomic.Int64) (locker, error) {
		pool := &redigo.Pool{MaxIdle: 4, Dial: func() (redigo.Conn, error) {
			c, err := redigo.Dial("tcp", addr)
			return redigoCounter{c, sent}, err
		}}
		d, err := redigodriver.New(pool)
		if err != nil {
			pool.Close()
			return nil, err
		}
		c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
		if err != nil {
			pool.Close()
			return nil, err
		}
		return redlockLocker{c, func() { pool.Close() }}, nil
	}}
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
