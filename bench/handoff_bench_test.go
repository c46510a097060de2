package bench_test

import (
	"context"
	"slices"
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

// BenchmarkHandoff is one lock contended by 10 Clients that each hold it
// for 20ms, on one real node, once per wait strategy. b.N is the number of
// acquisitions (run it with -benchtime 300x or so). It reports throughput
// as a fraction of the 1/hold bound, acquire latency, the hand-off gap
// (from the start of the holder's Unlock to the next holder's return from
// Lock), and Redis commands per acquisition from INFO commandstats: all of
// them (cmds/acq, counting those run inside scripts) and those sent by a
// client (requests/acq: the rest, less the commands that on this server
// run only inside the lock scripts), and the server's CPU time per
// acquisition (INFO cpu). Beside the bound it reports idle-rtt-µs, a
// PING's round trip after as long idle, measured in the same run.
//
// Notify-CONFIG-denied is Notify for Clients whose ACL user may not run
// CONFIG, on a server with no keyspace events: the managed-Redis case,
// where releases must hand the lock on by message alone.
func BenchmarkHandoff(b *testing.B) {
	for _, s := range []core.WaitStrategy{core.Notify, core.Poll} {
		b.Run(s.String(), func(b *testing.B) { benchHandoff(b, s, benchDriver) })
	}
	b.Run("Notify-CONFIG-denied", func(b *testing.B) { benchHandoff(b, core.Notify, deniedConfig(b)) })
}

func benchHandoff(b *testing.B, s core.WaitStrategy, open func(*testing.B, string) core.Driver) {
	const clients, hold = 10, 20 * time.Millisecond
	node := testenv.Nodes(b)[0]
	admin := redis.NewClient(&redis.Options{Addr: node})
	defer admin.Close()
	ctx := context.Background()
	name := "bench-handoff-" + s.String() + strconv.FormatInt(time.Now().UnixNano(), 36)
	mutexes := make([]*core.Mutex, clients)
	for i := range mutexes {
		c := benchClientOver(b, []core.Driver{open(b, node)}, core.WithWaitStrategy(s))
		mutexes[i] = c.Mutex(name, core.WithTTL(5*time.Second))
	}
	var (
		left          atomic.Int64
		releaseStart  atomic.Int64 // UnixNano of the last holder's Unlock call
		mu            sync.Mutex
		latency, gaps []time.Duration
		wg            sync.WaitGroup
	)
	left.Store(int64(b.N))
	idleRTT := idleRoundTrip(b, ctx, admin, hold)
	idlePub := idlePublish(b, ctx, admin, hold)
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	serverFrom := serverCPU(b, ctx, admin)
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
				got := time.Now()
				mu.Lock()
				latency = append(latency, got.Sub(asked))
				if r := releaseStart.Load(); r != 0 {
					gaps = append(gaps, got.Sub(time.Unix(0, r)))
				}
				mu.Unlock()
				holdFor(hold)
				releaseStart.Store(time.Now().UnixNano())
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
	serverUsed := serverCPU(b, ctx, admin) - serverFrom
	stats, err := admin.Info(ctx, "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	n := float64(b.N)
	b.ReportMetric(n*float64(hold)/float64(elapsed), "of-bound")
	b.ReportMetric(float64(idleRTT.Microseconds()), "idle-rtt-µs")
	b.ReportMetric(float64(idlePub.Microseconds()), "idle-publish-µs")
	b.ReportMetric(ms(percentile(latency, 50)), "acq-p50-ms")
	b.ReportMetric(ms(percentile(latency, 99)), "acq-p99-ms")
	b.ReportMetric(ms(percentile(latency, 100)), "acq-max-ms")
	b.ReportMetric(float64(percentile(gaps, 50).Microseconds()), "handoff-p50-µs")
	b.ReportMetric(float64(percentile(gaps, 99).Microseconds()), "handoff-p99-µs")
	b.ReportMetric(float64(serverUsed.Microseconds())/n, "server-cpu-µs/acq")
	all, inScripts := commandCalls(stats)
	b.ReportMetric(float64(all)/n, "cmds/acq")
	b.ReportMetric(float64(all-inScripts)/n, "requests/acq")
}

// idleRoundTrip is the median PING after the process and the server sat
// idle for a hold, as a holder's release does: the floor of a hand-off on
// this machine, where waking an idle CPU costs far more than the round
// trip between two busy ones.
func idleRoundTrip(b *testing.B, ctx context.Context, admin *redis.Client, idle time.Duration) time.Duration {
	var rtts []time.Duration
	for range 50 {
		time.Sleep(idle)
		start := time.Now()
		if err := admin.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		rtts = append(rtts, time.Since(start))
	}
	return percentile(rtts, 50)
}

// idlePublish is the median time from the start of a PUBLISH that ends a
// hold (holdFor, as a holder's release does), the server idle meanwhile,
// to its receipt by another goroutine subscribed through go-redis: the
// floor of any hand-off that wakes a waiter by a message, with no script
// and no lock at all.
func idlePublish(b *testing.B, ctx context.Context, admin *redis.Client, idle time.Duration) time.Duration {
	sub := redis.NewClient(admin.Options())
	defer sub.Close()
	channel := "bench-idle-publish-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ps := sub.Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		b.Fatal(err)
	}
	msgs := ps.Channel()
	var delays []time.Duration
	for range 50 {
		holdFor(idle)
		start := time.Now()
		if err := admin.Publish(ctx, channel, "x").Err(); err != nil {
			b.Fatal(err)
		}
		<-msgs
		delays = append(delays, time.Since(start))
	}
	return percentile(delays, 50)
}

// serverCPU is the CPU time the server used so far (INFO cpu).
func serverCPU(b *testing.B, ctx context.Context, admin *redis.Client) time.Duration {
	info, err := admin.Info(ctx, "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var used float64
	for line := range strings.SplitSeq(info, "\r\n") {
		for _, field := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, field); ok {
				s, err := strconv.ParseFloat(v, 64)
				if err != nil {
					b.Fatal(err)
				}
				used += s
			}
		}
	}
	return time.Duration(used * float64(time.Second))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// scriptOnly are the commands that, on a server without native
// compare-and-delete, only the lock scripts run.
var scriptOnly = map[string]bool{
	"set": true, "incr": true, "pttl": true, "type": true, "get": true, "del": true, "exists": true,
	"hincrby": true, "hexists": true, "publish": true, "pexpire": true, "zadd": true, "zrank": true, "zrem": true, "zrange": true,
}

// commandCalls sums calls= over INFO commandstats, less the CONFIG RESETSTAT
// and INFO of the measurement itself, and the part of it run in scripts.
func commandCalls(info string) (all, inScripts int) {
	for _, line := range strings.Split(info, "\n") {
		cmd, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":")
		if !ok || !strings.HasPrefix(line, "cmdstat_") || cmd == "info" || cmd == "config|resetstat" {
			continue
		}
		_, rest, _ = strings.Cut(rest, "calls=")
		v, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.Atoi(v)
		all += n
		if scriptOnly[cmd] {
			inScripts += n
		}
	}
	return all, inScripts
}
