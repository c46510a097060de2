package bench_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// BenchmarkRWMutex is one reader/writer lock used by 10 Clients, nine
// reads to one write, each lease held for 20ms, on one real node and on a
// three-node quorum, once per wait strategy. b.N is the number of
// acquisitions (run it with -benchtime 1000x or so). It reports how long
// writers and readers waited (the writers' p99 also as a multiple of the
// hold time: writer preference keeps it small however many readers come)
// and acquisitions per hold time.
func BenchmarkRWMutex(b *testing.B) {
	for _, topo := range benchTopologies {
		for _, w := range benchWaits {
			b.Run(topo.name+"/"+w.name, func(b *testing.B) { benchRWMutex(b, topo.nodes, w.opts) })
		}
	}
}

func benchRWMutex(b *testing.B, nodes int, wait []core.Option) {
	const clients, hold = 10, 20 * time.Millisecond
	addrs := testenv.Nodes(b)[:nodes]
	ctx := context.Background()
	name := "bench-rw-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	mutexes := make([]*core.RWMutex, clients)
	for i := range mutexes {
		mutexes[i] = benchClient(b, addrs, wait...).RWMutex(name, core.WithTTL(5*time.Second))
	}
	var (
		taken         atomic.Int64
		mu            sync.Mutex
		reads, writes []time.Duration
		wg            sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for _, m := range mutexes {
		wg.Go(func() {
			for {
				// Every tenth acquisition, counted over all clients, writes.
				k := taken.Add(1)
				if k > int64(b.N) {
					return
				}
				write := k%10 == 0
				lock, waited := m.RLock, &reads
				if write {
					lock, waited = m.Lock, &writes
				}
				asked := time.Now()
				l, err := lock(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				*waited = append(*waited, time.Since(asked))
				mu.Unlock()
				holdFor(hold)
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
	b.ReportMetric(ms(percentile(writes, 50)), "write-wait-p50-ms")
	b.ReportMetric(ms(percentile(writes, 99)), "write-wait-p99-ms")
	b.ReportMetric(ms(percentile(writes, 100)), "write-wait-max-ms")
	b.ReportMetric(float64(percentile(writes, 99))/float64(hold), "write-p99/hold")
	b.ReportMetric(ms(percentile(reads, 50)), "read-wait-p50-ms")
	b.ReportMetric(ms(percentile(reads, 99)), "read-wait-p99-ms")
	b.ReportMetric(float64(b.N)*float64(hold)/float64(elapsed), "acq/hold")
}
