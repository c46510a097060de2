package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

func benchClient(b *testing.B, addrs []string, opts ...core.Option) *core.Client {
	var ds []core.Driver
	for _, a := range addrs {
		ds = append(ds, benchDriver(b, a))
	}
	return benchClientOver(b, ds, opts...)
}

// benchDriver is a go-redis driver to addr, closed at the end.
func benchDriver(b *testing.B, addr string) core.Driver {
	rdb := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	b.Cleanup(func() { rdb.Close() })
	d, err := goredis.New(rdb)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// benchClientOver is a Poll Client over ds, closed at the end.
func benchClientOver(b *testing.B, ds []core.Driver, opts ...core.Option) *core.Client {
	c, err := core.New(ds, append([]core.Option{core.WithWaitStrategy(core.Poll)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

// lockUnlock is one uncontended acquisition and release.
func lockUnlock(b *testing.B, ctx context.Context, m *core.Mutex) {
	l, err := m.TryLock(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkQuorumOverhead measures uncontended TryLock+Unlock on one node
// and on a three-node quorum (without the fencing round trip, and with
// it), interleaved in the same run so that the machine's noise hits all
// alike. The quorum fans out in parallel, so quorum3/single should stay
// near 1, not near 3.
//
// On loopback a round trip is mostly CPU, which three servers and the
// client share on a small machine; the rtt1ms case puts each node behind a
// proxy that delays replies by 1ms, as a network would, where fan-out shows.
func BenchmarkQuorumOverhead(b *testing.B) {
	b.Run("loopback", func(b *testing.B) { benchQuorumOverhead(b, testenv.Nodes(b)[:3]) })
	b.Run("rtt1ms", func(b *testing.B) {
		var nodes []string
		for _, a := range testenv.Nodes(b)[:3] {
			p, _ := testenv.Proxy(b, a, 1)
			nodes = append(nodes, p)
		}
		benchQuorumOverhead(b, nodes)
	})
}

func benchQuorumOverhead(b *testing.B, nodes []string) {
	ctx := context.Background()
	single := benchClient(b, nodes[:1]).Mutex("bench-single")
	quorum := benchClient(b, nodes[:3], core.WithFencing(false)).Mutex("bench-quorum")
	fenced := benchClient(b, nodes[:3]).Mutex("bench-fenced")
	for _, m := range []*core.Mutex{single, quorum, fenced} {
		lockUnlock(b, ctx, m) // probes native commands once, outside the timing
	}
	var tSingle, tQuorum, tFenced time.Duration
	b.ResetTimer()
	for b.Loop() {
		for _, run := range []struct {
			m   *core.Mutex
			sum *time.Duration
		}{{single, &tSingle}, {quorum, &tQuorum}, {fenced, &tFenced}} {
			start := time.Now()
			lockUnlock(b, ctx, run.m)
			*run.sum += time.Since(start)
		}
	}
	n := float64(b.N)
	b.ReportMetric(float64(tSingle.Nanoseconds())/n, "single-ns/op")
	b.ReportMetric(float64(tQuorum.Nanoseconds())/n, "quorum3-ns/op")
	b.ReportMetric(float64(tFenced.Nanoseconds())/n, "quorum3-fenced-ns/op")
	b.ReportMetric(float64(tQuorum)/float64(tSingle), "quorum3/single")
	b.ReportMetric(float64(tFenced)/float64(tSingle), "fenced/single")
}
