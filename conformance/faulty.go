package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// faultyClient returns a Client over the cell's nodes whose script calls
// go through hook (see package faults), and the faults.Driver of each
// node. Delayed calls still pending when the case ends run as the Client
// closes, before the harness closes the clients under it.
func (e env) faultyClient(t testing.TB, hook faults.Hook, opts ...core.Option) (*core.Client, []*faults.Driver) {
	t.Helper()
	inner := e.drivers(t, e.addrs)
	ds := make([]core.Driver, len(inner))
	fds := make([]*faults.Driver, len(inner))
	for i, d := range inner {
		ds[i], fds[i] = faults.Wrap(d, i, hook)
	}
	return e.clientOver(t, ds, opts...), fds
}

// firstHeldBack is a faultyClient whose first call of op on the cell's
// last node lands only at flush.
func (e env) firstHeldBack(t testing.TB, op string, opts ...core.Option) (*core.Client, []*faults.Driver) {
	last := len(e.addrs) - 1
	return e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Node == last && c.Op == op && c.N == 1 {
			return later
		}
		return faults.Fault{}
	}, opts...)
}

// sentTwiceClient is a Client whose every script call of op reaches each
// node twice, as a client that sends it again after a lost reply does.
func (e env) sentTwiceClient(t testing.TB, op string, opts ...core.Option) *core.Client {
	c, _ := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Op == op {
			return faults.Fault{Kind: faults.Retry}
		}
		return faults.Fault{}
	}, opts...)
	return c
}

// flush runs every delayed call of fds now.
func flush(fds []*faults.Driver) {
	for _, fd := range fds {
		fd.Flush()
	}
}

// inTries runs round (given its try, from 1) until it returns true, at
// most tries times, and fails t with why if it never does. A round returns
// false when the machine's timing left what it checks unproved.
func inTries(t *testing.T, tries int, why string, round func(try int) bool) {
	t.Helper()
	for try := 1; try <= tries; try++ {
		if round(try) {
			return
		}
	}
	t.Fatalf("in %d tries, %s", tries, why)
}

// later is a Delay that lands only at flush: no sleep races a timer.
var later = faults.Fault{Kind: faults.Delay, After: time.Hour}

// gone waits until keys no longer exist on any of the cell's nodes (they
// expired there, or were released), failing t once within has passed.
func (e env) gone(t testing.TB, ctx context.Context, within time.Duration, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(within)
	for i := range e.addrs {
		a := e.admin(t, i)
		for {
			n, err := a.Exists(ctx, keys...).Result()
			if err == nil && n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: %d of %q still exist after %v (%v)", i, n, keys, within, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// awaitCalls waits until fd made n calls of op, failing t when the
// waiter's Lock returns first (done) or 5s pass.
func awaitCalls(t *testing.T, fd *faults.Driver, op string, n int, done <-chan locked) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for fd.Calls(op) < n {
		select {
		case r := <-done:
			t.Fatalf("the waiter's Lock returned (%v) before it made %d calls of %s", r.err, n, op)
		case <-deadline:
			t.Fatalf("the waiter made %d calls of %s in 5s, want %d", fd.Calls(op), op, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
