package conformance

import (
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testLatchCountDownCopy: each CountDown's request is copied on every
// node, the copy landing later. A copy must not count down again: not the
// setting its call counted down (which would open a latch that still
// needs a count-down), nor a later setting, once the call's count-down
// opened the latch and it was set again.
func testLatchCountDownCopy(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Op == "LatchCountDown" {
			return faults.Fault{Kind: faults.Duplicate, After: time.Hour}
		}
		return faults.Fault{}
	}, core.WithNodeTimeout(time.Second))
	defer flush(fds)
	l, plain := c.Latch(n), e.latchClient(t).Latch(n)
	count := func() int64 {
		t.Helper()
		got, err := plain.Count(ctx)
		if err != nil {
			t.Fatalf("Count: %v", err)
		}
		return got
	}
	if ok, err := plain.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount(2) on a new latch: got (%v, %v), want true", ok, err)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatalf("CountDown of 2: %v", err)
	}
	flush(fds)
	if got := count(); got != 1 {
		t.Fatalf("count after one CountDown of 2, its request copied on every node: %d, want 1: a copy that counts down again opens the latch early", got)
	}
	if err := l.CountDown(ctx); err != nil {
		t.Fatalf("CountDown of 1: %v", err)
	}
	if ok, err := plain.TrySetCount(ctx, 2); err != nil || !ok {
		t.Fatalf("TrySetCount(2) once the latch opened: got (%v, %v), want true", ok, err)
	}
	flush(fds)
	if got := count(); got != 2 {
		t.Fatalf("count of a latch set to 2 after it opened, once the copies of the CountDown that opened it landed: %d, want 2: a copy counted down a setting its call never saw", got)
	}
}
