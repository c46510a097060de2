package core_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/internal/testenv"
)

// BenchmarkMultiLock has 10 Clients each take a MultiLock of 3 names and
// hold it for 20ms, on one real node, per wait strategy. b.N is the number
// of acquisitions (run it with -benchtime 300x or so). Two layouts:
//
//   - Same: every Client locks the same 3 names, so at most one holds at a
//     time; the bound is 1/hold, as for one Mutex (BenchmarkHandoff).
//   - Ring: Client i locks names i, i+1, i+2 of 10 in a ring, so each name
//     is wanted by 3 Clients and at most 3 can hold at once; the bound is
//     3/hold.
//
// It reports throughput as a fraction of the bound and acquire latency.
func BenchmarkMultiLock(b *testing.B) {
	for _, layout := range []string{"Same", "Ring"} {
		for _, s := range []core.WaitStrategy{core.Notify, core.Poll} {
			b.Run(layout+"/"+s.String(), func(b *testing.B) { benchMultiLock(b, layout, s) })
		}
	}
}

func benchMultiLock(b *testing.B, layout string, s core.WaitStrategy) {
	const clients, width, hold = 10, 3, 20 * time.Millisecond
	node := testenv.Nodes(b)[0]
	ctx := context.Background()
	base := "bench-multilock-" + layout + s.String() + strconv.FormatInt(time.Now().UnixNano(), 36)
	locks := make([]*core.MultiLock, clients)
	for i := range locks {
		var names []string
		for j := range width {
			k := j
			if layout == "Ring" {
				k = (i + j) % clients
			}
			names = append(names, fmt.Sprintf("%s/%d", base, k))
		}
		locks[i] = benchClient(b, []string{node}, core.WithWaitStrategy(s)).MultiLock(names, core.WithTTL(5*time.Second))
	}
	concurrent := 1
	if layout == "Ring" {
		concurrent = clients / width
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
	for _, ml := range locks {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				asked := time.Now()
				l, err := ml.Lock(ctx)
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
	bound := float64(concurrent) * float64(elapsed) / float64(hold)
	b.ReportMetric(float64(b.N)/bound, "of-bound")
	b.ReportMetric(ms(percentile(latency, 50)), "acq-p50-ms")
	b.ReportMetric(ms(percentile(latency, 99)), "acq-p99-ms")
	b.ReportMetric(ms(percentile(latency, 100)), "acq-max-ms")
}
