package bench_test

import (
	"context"
	"strconv"
	"syscall"
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
// made per cycle, a 5s TTL), and TryLock and Unlock under the default
// options, so that
//
//	go test -run '^$' -bench Cycle -benchmem -count 5 ./bench/
//
// compares their time, allocations and client CPU per cycle in one run. Most of the
// time is the two round trips to the server, which shares the machine.
// The interleaved sub-benchmark runs a go-redis cycle of each in turn, so
// that the machine's noise hits them alike, and reports each one's time
// and its ratio to bsm/redislock's.
func BenchmarkCycle(b *testing.B) {
	const ttl = 5 * time.Second
	node := testenv.Nodes(b)[0]
	key := "bench-cycle-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ctx := context.Background()
	goredisCycle := func(b *testing.B, s core.WaitStrategy) func() error {
		rdb := redis.NewClient(&redis.Options{Addr: node, ContextTimeoutEnabled: true})
		b.Cleanup(func() { rdb.Close() })
		d, err := goredis.New(rdb)
		if err != nil {
			b.Fatal(err)
		}
		return redlockCycle(b, d, s, key+"-goredis-"+s.String(), ttl)
	}
	// tryCycle is TryLock and Unlock, which does not wait: no line, no ticket.
	tryCycle := func(b *testing.B) func() error {
		c, err := core.New([]core.Driver{benchDriver(b, node)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		k := key + "-goredis-try"
		return func() error {
			l, err := c.Mutex(k, core.WithTTL(ttl)).TryLock(ctx)
			if err != nil {
				return err
			}
			return l.Unlock(ctx)
		}
	}
	redislockCycle := func(b *testing.B) func() error {
		rdb := redis.NewClient(&redis.Options{Addr: node, ContextTimeoutEnabled: true})
		b.Cleanup(func() { rdb.Close() })
		c, k := redislock.New(rdb), key+"-redislock"
		return func() error {
			// As lockbench: a deadline, and a fresh strategy per Obtain.
			ctx, cancel := context.WithTimeout(ctx, ttl)
			defer cancel()
			l, err := c.Obtain(ctx, k, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)})
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}
	}
	for _, s := range []core.WaitStrategy{core.Notify, core.Poll} {
		b.Run("redlock-goredis-"+s.String(), func(b *testing.B) { benchCycle(b, goredisCycle(b, s)) })
	}
	b.Run("redlock-goredis-TryLock", func(b *testing.B) { benchCycle(b, tryCycle(b)) })
	b.Run("redislock", func(b *testing.B) { benchCycle(b, redislockCycle(b)) })
	b.Run("interleaved", func(b *testing.B) {
		cycles := []struct {
			name  string
			cycle func() error
			took  time.Duration
		}{{"redislock", redislockCycle(b), 0}, {"Notify", goredisCycle(b, core.Notify), 0}, {"Poll", goredisCycle(b, core.Poll), 0}, {"TryLock", tryCycle(b), 0}}
		for _, c := range cycles {
			warm(b, c.cycle)
		}
		b.ResetTimer()
		for b.Loop() {
			for i := range cycles {
				start := time.Now()
				if err := cycles[i].cycle(); err != nil {
					b.Fatal(err)
				}
				cycles[i].took += time.Since(start)
			}
		}
		for _, c := range cycles {
			b.ReportMetric(float64(c.took.Nanoseconds())/float64(b.N), c.name+"-ns/op")
		}
		for _, c := range cycles[1:] {
			b.ReportMetric(float64(c.took)/float64(cycles[0].took), c.name+"/redislock")
		}
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
	warm(b, cycle)
	b.ReportAllocs()
	cpu := processCPU(b)
	for b.Loop() {
		if err := cycle(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU(b)-cpu).Nanoseconds())/float64(b.N), "client-cpu-ns/op")
}

// processCPU is the CPU time the process used so far, user and system.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// warm runs a few cycles, which dial the connections and load the scripts.
func warm(b *testing.B, cycle func() error) {
	for range 20 {
		if err := cycle(); err != nil {
			b.Fatal(err)
		}
	}
}
