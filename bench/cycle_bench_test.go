package bench_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

// BenchmarkCycle is one uncontended Lock and Unlock of a free key on the
// first node of REDLOCK_TEST_NODES, for this library with go-redis (under
// each wait strategy) beside bsm/redislock on go-redis, and with rueidis
// beside rueidislock, each as lockbench's cycle workload runs it (a Mutex
// made per cycle, a 5s TTL), so that
//
//	go test -run '^$' -bench Cycle -benchmem -count 5 ./bench/
//
// compares their time and allocations per cycle in one run. Most of the
// time is the two round trips to the server, which shares the machine.
func BenchmarkCycle(b *testing.B) {
	const ttl = 5 * time.Second
	node := testenv.Nodes(b)[0]
	key := "bench-cycle-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx := context.Background()
	for _, s := range []core.WaitStrategy{core.Notify, core.Poll} {
		b.Run("redlock-goredis-"+s.String(), func(b *testing.B) {
			rdb := redis.NewClient(&redis.Options{Addr: node, ContextTimeoutEnabled: true})
			defer rdb.Close()
			d, err := goredis.New(rdb)
			if err != nil {
				b.Fatal(err)
			}
			benchCycle(b, redlockCycle(b, d, s, key+"-goredis-"+s.String(), ttl))
		})
	}
	b.Run("redislock", func(b *testing.B) {
		rdb := redis.NewClient(&redis.Options{Addr: node, ContextTimeoutEnabled: true})
		defer rdb.Close()
		c, k := redislock.New(rdb), key+"-redislock"
		benchCycle(b, func() error {
			// As lockbench: a deadline, and a fresh strategy per Obtain.
			ctx, cancel := context.WithTimeout(ctx, ttl)
			defer cancel()
			l, err := c.Obtain(ctx, k, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)})
			if err != nil {
				return err
			}
			return l.Release(ctx)
		})
	})
	b.Run("redlock-rueidis-Notify", func(b *testing.B) {
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{node}, DisableCache: true})
		if err != nil {
			b.Fatal(err)
		}
		defer rc.Close()
		d, err := rueidisdriver.New(rc)
		if err != nil {
			b.Fatal(err)
		}
		benchCycle(b, redlockCycle(b, d, core.Notify, key+"-rueidis", ttl))
	})
	b.Run("rueidislock", func(b *testing.B) {
		l, err := rueidislock.NewLocker(rueidislock.LockerOption{ClientOption: rueidis.ClientOption{InitAddress: []string{node}}, KeyValidity: ttl})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		k := key + "-rueidislock"
		benchCycle(b, func() error {
			_, cancel, err := l.WithContext(ctx, k)
			if err != nil {
				return err
			}
			cancel() // releases the keys, and returns once they are
			return nil
		})
	})
}

// redlockCycle is one cycle of a Client over d waiting by s.
func redlockCycle(b *testing.B, d core.Driver, s core.WaitStrategy, key string, ttl time.Duration) func() error {
	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(s))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	ctx := context.Background()
	return func() error {
		l, err := c.Mutex(key, core.WithTTL(ttl)).Lock(ctx)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
}

// benchCycle times cycle, after a few cycles that dial the connections
// and load the scripts.
func benchCycle(b *testing.B, cycle func() error) {
	for range 20 {
		if err := cycle(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := cycle(); err != nil {
			b.Fatal(err)
		}
	}
}
