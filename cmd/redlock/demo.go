package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/alicebob/miniredis/v2"
	redigoredis "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
	"github.com/redlockgo/redlock/drivers/redigo"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

// opener connects one new client to addr and returns a driver over it and
// the function that closes the client.
type opener func(addr string) (core.Driver, func(), error)

// drivers are the adapters the demo runs, in the order it prints them.
var drivers = []struct {
	name string
	open opener
}{
	{"goredis", func(addr string) (core.Driver, func(), error) {
		client := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
		d, err := goredis.New(client)
		return d, func() { client.Close() }, err
	}},
	{"redigo", func(addr string) (core.Driver, func(), error) {
		pool := &redigoredis.Pool{DialContext: func(ctx context.Context) (redigoredis.Conn, error) {
			return redigoredis.DialContext(ctx, "tcp", addr)
		}}
		d, err := redigo.New(pool)
		return d, func() { pool.Close() }, err
	}},
	{"rueidis", func(addr string) (core.Driver, func(), error) {
		// miniredis has no CLIENT TRACKING, which rueidis' cache needs.
		client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
		if err != nil {
			return nil, func() {}, err
		}
		d, err := rueidisdriver.New(client)
		return d, client.Close, err
	}},
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintf(stderr, "redlock demo: unexpected arguments %q\n\n", args)
		usage(stderr)
		return 2
	}
	if err := demo(ctx, stdout); err != nil {
		fmt.Fprintln(stderr, "redlock demo:", err)
		return 1
	}
	return 0
}

// demo starts an in-process miniredis and runs the Mutex demo with every
// driver, printing one line each. It returns the failures, joined.
func demo(ctx context.Context, w io.Writer) error {
	srv, err := miniredis.Run()
	if err != nil {
		return fmt.Errorf("starting miniredis: %w", err)
	}
	defer srv.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var errs []error
	for _, d := range drivers {
		start := time.Now()
		first, second, err := contend(ctx, srv.Addr(), d.name, d.open)
		took := time.Since(start)
		if err != nil {
			fmt.Fprintf(w, "%-8s FAIL  %v\n", d.name, err)
			errs = append(errs, fmt.Errorf("%s: %w", d.name, err))
			continue
		}
		fmt.Fprintf(w, "%-8s ok    lock/contend/unlock/fence %d→%d  (%d µs)\n", d.name, first, second, took.Microseconds())
	}
	return errors.Join(errs...)
}

// contend has two clients, each with its own connection, contend for one
// Mutex and returns the fencing tokens of their leases.
func contend(ctx context.Context, addr, name string, open opener) (first, second uint64, err error) {
	var clients [2]*core.Client
	for i := range clients {
		d, closeConn, err := open(addr)
		defer closeConn()
		if err != nil {
			return 0, 0, err
		}
		// miniredis has no keyspace notifications, so waiters poll.
		c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll), core.WithTTL(5*time.Second))
		if err != nil {
			return 0, 0, err
		}
		defer c.Close()
		clients[i] = c
	}
	a, b := clients[0].Mutex("demo:"+name), clients[1].Mutex("demo:"+name)

	la, err := a.TryLock(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("first client's TryLock: %w", err)
	}
	if l, err := b.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		if l != nil {
			l.Unlock(ctx)
		}
		return 0, 0, fmt.Errorf("second client's TryLock while the lock is held: got %v, want ErrNotAcquired", err)
	}
	if err := la.Unlock(ctx); err != nil {
		return 0, 0, fmt.Errorf("first client's Unlock: %w", err)
	}
	lb, err := b.Lock(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("second client's Lock after the release: %w", err)
	}
	defer lb.Unlock(ctx)
	if lb.Token() <= la.Token() {
		return 0, 0, fmt.Errorf("fencing token went from %d to %d; it must increase", la.Token(), lb.Token())
	}
	if err := lb.Unlock(ctx); err != nil {
		return 0, 0, fmt.Errorf("second client's Unlock: %w", err)
	}
	return la.Token(), lb.Token(), nil
}
