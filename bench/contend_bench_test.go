package bench_test

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// benchClients and benchHold are the contention of every primitive
// benchmark: 10 Clients that each hold what they took for 20ms and ask
// again at once.
const (
	benchClients = 10
	benchHold    = 20 * time.Millisecond
)

// holdFor is a critical section of d. time.Sleep alone ends up to a
// millisecond late, as the runtime's netpoller sleeps in whole
// milliseconds: 2% of a 20ms hold, which the lock would be charged with.
// It sleeps to a millisecond before the end and yields until the end.
func holdFor(d time.Duration) {
	end := time.Now().Add(d)
	time.Sleep(d - time.Millisecond)
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}

// acquirer is one Client's way to take a primitive.
type acquirer func(context.Context) (*core.Lease, error)

// contention is the outcome of contend.
type contention struct {
	elapsed     time.Duration
	latency     []time.Duration // of every acquisition
	unconfirmed atomic.Int64    // Unlocks that too few nodes answered (ErrNoQuorum)
}

// contend has each acquirer take its primitive, hold it for benchHold and
// release it, again and again, until b.N acquisitions in all.
func contend(b *testing.B, acquirers []acquirer) *contention {
	ctx := context.Background()
	var (
		left atomic.Int64
		mu   sync.Mutex
		out  = new(contention)
		wg   sync.WaitGroup
	)
	left.Store(int64(b.N))
	b.ResetTimer()
	start := time.Now()
	for _, acquire := range acquirers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				asked := time.Now()
				l, err := acquire(ctx)
				if err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				out.latency = append(out.latency, time.Since(asked))
				mu.Unlock()
				holdFor(benchHold)
				if err := l.Unlock(ctx); errors.Is(err, core.ErrNoQuorum) {
					out.unconfirmed.Add(1) // the keys expire at their TTL: a node is down
				} else if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	out.elapsed = time.Since(start)
	b.StopTimer()
	return out
}

// report reports throughput as a fraction of the bound, concurrent
// holders per hold time, and acquire latency.
func (r *contention) report(b *testing.B, concurrent int) {
	bound := float64(concurrent) * float64(r.elapsed) / float64(benchHold)
	b.ReportMetric(float64(b.N)/bound, "of-bound")
	b.ReportMetric(ms(percentile(r.latency, 50)), "acq-p50-ms")
	b.ReportMetric(ms(percentile(r.latency, 99)), "acq-p99-ms")
	b.ReportMetric(ms(percentile(r.latency, 100)), "acq-max-ms")
	if n := r.unconfirmed.Load(); n > 0 {
		b.ReportMetric(float64(n)/float64(b.N), "unconfirmed-unlocks/op")
	}
}

// benchPrimitives are the rows of BenchmarkPrimitives: how one Client
// takes the primitive called name, and how many may hold it at once.
var benchPrimitives = []struct {
	name       string
	concurrent int
	acquirer   func(c *core.Client, name string) acquirer
}{
	{"Mutex", 1, func(c *core.Client, n string) acquirer { return c.Mutex(n, benchTTL).Lock }},
	{"FairMutex", 1, func(c *core.Client, n string) acquirer { return c.FairMutex(n, benchTTL).Lock }},
	{"RWMutex-writers", 1, func(c *core.Client, n string) acquirer { return c.RWMutex(n, benchTTL).Lock }},
	{"MultiLock", 1, func(c *core.Client, n string) acquirer {
		return c.MultiLock([]string{n + "/a", n + "/b", n + "/c"}, benchTTL).Lock
	}},
	{"Semaphore", 3, func(c *core.Client, n string) acquirer {
		s := c.Semaphore(n, 3, benchTTL)
		return func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, 1) }
	}},
}

var benchTTL = core.WithTTL(5 * time.Second)

// benchTopologies are the node sets of BenchmarkPrimitives and
// BenchmarkRWMutex: one node, and a three-node quorum.
var benchTopologies = []struct {
	name  string
	nodes int
}{{"single", 1}, {"quorum3", 3}}

// benchWaits are the ways to wait of BenchmarkPrimitives and BenchmarkRWMutex:
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

// BenchmarkPrimitives is the consolidated table: every primitive
// contended by 10 Clients that hold it for 20ms and ask again at once, on
// one real node and on a three-node quorum, per way to wait (benchWaits). b.N is the
// number of acquisitions (run it with -benchtime 300x or so). It reports
// throughput as a fraction of the bound (concurrent holders / hold), and
// acquire latency, its p99 also as a fraction of (clients − 1) × hold, the
// wait of a first-come-first-served turn. A MultiLock takes 3 names, the
// same for every Client; a Semaphore has 3 permits, taken one at a time;
// the RWMutex row has writers only (BenchmarkRWMutex mixes in readers).
func BenchmarkPrimitives(b *testing.B) {
	for _, p := range benchPrimitives {
		for _, topo := range benchTopologies {
			for _, w := range benchWaits {
				b.Run(p.name+"/"+topo.name+"/"+w.name, func(b *testing.B) {
					addrs := testenv.Nodes(b)[:topo.nodes]
					name := "bench-" + p.name + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
					acquirers := make([]acquirer, benchClients)
					for i := range acquirers {
						acquirers[i] = p.acquirer(benchClient(b, addrs, w.opts...), name)
					}
					r := contend(b, acquirers)
					r.report(b, p.concurrent)
					turn := time.Duration(benchClients/p.concurrent-1) * benchHold
					b.ReportMetric(float64(percentile(r.latency, 99))/float64(turn), "acq-p99/turn")
				})
			}
		}
	}
}
