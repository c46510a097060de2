package conformance

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// aheadStart starts a fencing counter as a node whose clock runs ahead by
// just under the idle expiry (ARGV[1] ms) would: at (its time + idle) ×
// 1024, for idle ms. It returns the counter.
const aheadStart = `local t = redis.call('time')
local v = (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])) * 1024
redis.call('set', KEYS[1], string.format('%.0f', v), 'PX', ARGV[1])
return v`

// testFenceAcrossAheadClock: node 1's clock runs ahead of the others' by
// just under the idle expiry, as the clock assumption allows, and its
// counter starts again, at (its time + idle) × 1024. The next acquisition
// raises nodes 0 and 2 to its token; node 1 then goes out of reach, and
// the name is taken and released on nodes 0 and 2 until just before the
// raise expires, each draw in step (no raise). Once that expiry has
// passed, the next token must still exceed them all. A counter that
// expires an idle expiry after its raise, whatever was drawn from it
// since, starts again from the clock below those draws as soon as they
// number 1024 for each millisecond from node 1's start to the raise, plus
// 1024: a few thousand.
//
// It takes the idle expiry (5s) and those acquisitions: a long run only
// (REDLOCK_LONG=1).
func testFenceAcrossAheadClock(t *testing.T, e env) {
	const idle = 5 * time.Second
	inTries(t, 3, "the acquisitions never passed a start from the clock before the counters expired", func(int) bool {
		ctx, n := ctxFor(t, 30*time.Second), name(t)
		var ahead atomic.Bool // node 1 in reach
		ahead.Store(true)
		c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if call.Node == 1 && !ahead.Load() {
				return faults.Fault{Kind: faults.Drop}
			}
			return faults.Fault{}
		}, core.WithIdleExpiry(idle), core.WithNodeTimeout(time.Second))
		m := c.Mutex(n)
		cycle := func() uint64 {
			t.Helper()
			l, err := m.TryLock(ctx)
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
			return l.Token()
		}
		cycle() // the counters start on every node, and the connections
		start, err := e.admin(t, 1).Eval(ctx, aheadStart, []string{fenceKey(n)}, idle.Milliseconds()).Int64()
		if err != nil {
			t.Fatal(err)
		}
		last := cycle()
		if last != uint64(start)+1 {
			return false // granted before node 1 answered
		}
		ahead.Store(false)
		if token := cycle(); token != last+1 { // raises node 2 too, if it answered too late for the first
			t.Fatalf("token %d after token %d: node 0 did not draw in step", token, last)
		}
		last++
		// The raises set when the counters of nodes 0 and 2 expire.
		var expire [2]int64
		for k, i := range []int{0, 2} {
			ms, err := e.admin(t, i).Do(ctx, "PEXPIRETIME", fenceKey(n)).Int64()
			if err != nil {
				t.Fatal(err)
			}
			expire[k] = ms
		}
		first, both := time.UnixMilli(min(expire[0], expire[1])), time.UnixMilli(max(expire[0], expire[1]))
		for time.Until(first) > 30*time.Millisecond {
			token := cycle()
			if token != last+1 {
				t.Fatalf("token %d after token %d: the counters, in step, did not draw in step", token, last)
			}
			last = token
		}
		// Both expire before the next draw, which no raise answers.
		time.Sleep(time.Until(both.Add(2 * time.Millisecond)))
		l, err := m.TryLock(ctx)
		if err != nil {
			t.Fatalf("TryLock on nodes 0 and 2: %v", err)
		}
		defer l.Unlock(ctx)
		switch {
		case l.Token() <= last:
			t.Fatalf("token %d after token %d: fencing went backwards when the counters of nodes 0 and 2 started again from the clock (they were raised to %d, then drew in step %d times)", l.Token(), last, start+1, last-uint64(start)-1)
		case l.Token() != last+1:
			return false // started again above them: too few draws to show anything
		}
		return true
	})
}
