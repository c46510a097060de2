package bench_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// BenchmarkSemaphore is a semaphore of 3 permits contended by 10 Clients
// that each take one permit for 20ms, on one real node, once per wait
// strategy. b.N is the number of acquisitions (run it with -benchtime
// 300x or so). It reports throughput as a fraction of the permits/hold
// bound, acquire latency, the gap from a release to the next acquisition
// of a permit, and the script calls per acquisition (acquisitions,
// refused attempts and releases) from INFO commandstats.
func BenchmarkSemaphore(b *testing.B) {
	for _, s := range []core.WaitStrategy{core.Notify, core.Poll} {
		b.Run(s.String(), func(b *testing.B) { benchSemaphore(b, s) })
	}
}

func benchSemaphore(b *testing.B, s core.WaitStrategy) {
	const permits, clients, hold = 3, 10, 20 * time.Millisecond
	node := testenv.Nodes(b)[0]
	admin := redis.NewClient(&redis.Options{Addr: node})
	defer admin.Close()
	ctx := context.Background()
	name := "bench-semaphore-" + s.String() + strconv.FormatInt(time.Now().UnixNano(), 36)
	sems := make([]*core.Semaphore, clients)
	for i := range sems {
		sems[i] = benchClient(b, []string{node}, core.WithWaitStrategy(s)).Semaphore(name, permits, core.WithTTL(5*time.Second))
	}
	var (
		left          atomic.Int64
		mu            sync.Mutex
		released      []time.Time // release calls not yet followed by an acquisition
		latency, gaps []time.Duration
		wg            sync.WaitGroup
	)
	left.Store(int64(b.N))
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	for _, sem := range sems {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				asked := time.Now()
				l, err := sem.Acquire(ctx, 1)
				if err != nil {
					b.Error(err)
					return
				}
				got := time.Now()
				mu.Lock()
				latency = append(latency, got.Sub(asked))
				if len(released) > 0 {
					gaps = append(gaps, got.Sub(released[0]))
					released = released[1:]
				}
				mu.Unlock()
				holdFor(hold)
				mu.Lock()
				released = append(released, time.Now())
				mu.Unlock()
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
	stats, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(n*float64(hold)/(permits*float64(elapsed)), "of-bound")
	b.ReportMetric(ms(percentile(latency, 50)), "acq-p50-ms")
	b.ReportMetric(ms(percentile(latency, 99)), "acq-p99-ms")
	b.ReportMetric(float64(percentile(gaps, 50).Microseconds()), "handoff-p50-µs")
	b.ReportMetric(float64(percentile(gaps, 99).Microseconds()), "handoff-p99-µs")
	b.ReportMetric(float64(scriptCalls(stats))/n, "scripts/acq")
}

// scriptCalls sums the calls of EVALSHA and EVAL in INFO commandstats.
func scriptCalls(info string) int {
	total := 0
	for _, line := range strings.Split(info, "\n") {
		cmd, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || (cmd != "evalsha" && cmd != "eval") {
			continue
		}
		_, rest, _ = strings.Cut(rest, "calls=")
		v, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.Atoi(v)
		total += n
	}
	return total
}
