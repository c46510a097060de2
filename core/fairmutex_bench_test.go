package core_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/internal/testenv"
)

// benchTopologies are the node sets of the FairMutex and RWMutex
// benchmarks: one node, and a three-node quorum.
var benchTopologies = []struct {
	name  string
	nodes int
}{{"single", 1}, {"quorum3", 3}}

// benchWaits are the ways to wait of the FairMutex and RWMutex benchmarks:
// each strategy with its defaults, and Poll with a 5ms backoff cap. Under
// Poll only a waiter's own retry notices a release, and with a fair lock
// or a waiting writer only one waiter may take it: the cap bounds the
// hand-off.
var benchWaits = []struct {
	name string
	opts []core.Option
}{
	{"Notify", []core.Option{core.WithWaitStrategy(core.Notify)}},
	{"Poll", []core.Option{core.WithWaitStrategy(core.Poll)}},
	{"Poll-cap5ms", []core.Option{core.WithWaitStrategy(core.Poll),
		core.WithBackoff(core.Backoff{Base: time.Millisecond, Cap: 5 * time.Millisecond, Multiplier: 2})}},
}

// BenchmarkFairMutex is one fair lock contended by 10 Clients that each
// hold it for 20ms and ask again at once, on one real node and on a
// three-node quorum, once per wait strategy. b.N is the number of
// acquisitions (run it with -benchtime 300x or so). First come, first
// served, each Lock waits for the 9 others: it reports throughput as a
// fraction of the 1/hold bound and acquire latency, also as a fraction of
// (clients − 1) × hold (acq-p99/wait-bound).
func BenchmarkFairMutex(b *testing.B) {
	for _, topo := range benchTopologies {
		for _, w := range benchWaits {
			b.Run(topo.name+"/"+w.name, func(b *testing.B) { benchFairMutex(b, topo.nodes, w.opts) })
		}
	}
}

func benchFairMutex(b *testing.B, nodes int, wait []core.Option) {
	const clients, hold = 10, 20 * time.Millisecond
	addrs := testenv.Nodes(b)[:nodes]
	ctx := context.Background()
	name := "bench-fair-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mutexes := make([]*core.FairMutex, clients)
	for i := range mutexes {
		mutexes[i] = benchClient(b, addrs, wait...).FairMutex(name, core.WithTTL(5*time.Second))
	}
	var (
		left    atomic.Int64
		mu      sync.Mutex
		latency []time.Duration
		wg      sync.WaitGroup
	)
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	for _, m := range mutexes {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				asked := time.Now()
				l, err := m.Lock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				latency = append(latency, time.Since(asked))
				mu.Unlock()
				time.Sleep(hold)
				if err := l.Unlock(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)*float64(hold)/float64(elapsed), "of-bound")
	b.ReportMetric(ms(percentile(latency, 50)), "acq-p50-ms")
	b.ReportMetric(ms(percentile(latency, 99)), "acq-p99-ms")
	b.ReportMetric(ms(percentile(latency, 100)), "acq-max-ms")
	b.ReportMetric(float64(percentile(latency, 99))/float64((clients-1)*hold), "acq-p99/wait-bound")
}
