package bench_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// BenchmarkMultiLockRing has 10 Clients each take a MultiLock of 3 names
// of 10 in a ring (Client i locks names i, i+1, i+2), so each name is
// wanted by 3 Clients and at most 3 Clients can hold at once, and hold it
// for 20ms, on one real node, per wait strategy. b.N is the number of
// acquisitions (run it with -benchtime 300x or so). It reports throughput
// as a fraction of the 3/hold bound and acquire latency. (BenchmarkPrimitives
// has every Client lock the same 3 names.)
func BenchmarkMultiLockRing(b *testing.B) {
	for _, s := range []core.WaitStrategy{core.Notify, core.Poll} {
		b.Run(s.String(), func(b *testing.B) {
			const width = 3
			node := testenv.Nodes(b)[0]
			base := "bench-multilock-ring-" + s.String() + strconv.FormatInt(time.Now().UnixNano(), 36)
			acquirers := make([]acquirer, benchClients)
			for i := range acquirers {
				var names []string
				for j := range width {
					names = append(names, fmt.Sprintf("%s/%d", base, (i+j)%benchClients))
				}
				acquirers[i] = benchClient(b, []string{node}, core.WithWaitStrategy(s)).MultiLock(names, benchTTL).Lock
			}
			contend(b, acquirers).report(b, benchClients/width)
		})
	}
}
