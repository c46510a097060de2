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

// flush runs every delayed call of fds now.
func flush(fds []*faults.Driver) {
	for _, fd := range fds {
		fd.Flush()
	}
}

// later is a Delay that lands only at flush: no sleep races a timer.
var later = faults.Fault{Kind: faults.Delay, After: time.Hour}

// gone waits until keys no longer exist on any of the cell's nodes (they
// expired there), failing t after ten seconds.
func (e env) gone(t testing.TB, ctx context.Context, keys ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for i := range e.addrs {
		a := e.admin(t, i)
		for {
			n, err := a.Exists(ctx, keys...).Result()
			if err == nil && n == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d: %d of %q still exist after 10s (%v)", i, n, keys, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
