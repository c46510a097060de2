package bench_test

import (
	"context"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/matrix"
	"github.com/redlockgo/redlock/core"
)

// BenchmarkReplicaAcks measures uncontended TryLock+Unlock on a master with
// one replica of its own (matrix.StartPair), waiting for the replica
// (the default) and not (WithReplicaAcks(0)), interleaved in the same run
// so that the machine's noise hits both alike: what the WAIT round trip
// costs an acquisition.
func BenchmarkReplicaAcks(b *testing.B) {
	ctx := context.Background()
	pair, err := matrix.StartPair(ctx, matrix.RedisServer)
	if err != nil {
		b.Skipf("a master and its replica: %v", err)
	}
	b.Cleanup(pair.Close)
	waits := benchClient(b, pair.Masters).Mutex("bench-acks")
	none := benchClient(b, pair.Masters, core.WithReplicaAcks(0)).Mutex("bench-no-acks")
	for _, m := range []*core.Mutex{waits, none} {
		lockUnlock(b, ctx, m) // counts the replicas and probes natives, outside the timing
	}
	var tWaits, tNone time.Duration
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		lockUnlock(b, ctx, waits)
		mid := time.Now()
		lockUnlock(b, ctx, none)
		tWaits += mid.Sub(start)
		tNone += time.Since(mid)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tWaits.Nanoseconds())/n, "acks1-ns/op")
	b.ReportMetric(float64(tNone.Nanoseconds())/n, "acks0-ns/op")
	b.ReportMetric(float64(tWaits)/float64(tNone), "acks1/acks0")
}
