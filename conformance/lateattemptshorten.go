package conformance

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// waitedLease is a lease kind taken by a waiter whose attempts share one
// token: its acquire operation, how a holder keeps the waiter out, how
// the waiter waits, and how a rival tries to take what it excludes.
type waitedLease struct {
	op                string
	hold, wait, rival taker
}

// taker is one way to take a lease of name.
type taker = func(ctx context.Context, c *core.Client, name string) (*core.Lease, error)

// takerOf makes the taker that calls take on the primitive of(c, name,
// opts...).
func takerOf[P any](of func(*core.Client, string, ...core.Option) P, take func(P, context.Context) (*core.Lease, error), opts ...core.Option) taker {
	return func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
		return take(of(c, n, opts...), ctx)
	}
}

var (
	waitMutex  = takerOf((*core.Client).Mutex, (*core.Mutex).Lock)
	tryMutex   = takerOf((*core.Client).Mutex, (*core.Mutex).TryLock)
	waitFair   = takerOf((*core.Client).FairMutex, (*core.FairMutex).Lock)
	tryFair    = takerOf((*core.Client).FairMutex, (*core.FairMutex).TryLock)
	waitWriter = takerOf((*core.Client).RWMutex, (*core.RWMutex).Lock)
	tryWriter  = takerOf((*core.Client).RWMutex, (*core.RWMutex).TryLock)
	waitReader = takerOf((*core.Client).RWMutex, (*core.RWMutex).RLock)
	tryReader  = takerOf((*core.Client).RWMutex, (*core.RWMutex).TryRLock)
)

var waitedLeases = map[string]map[string]waitedLease{
	"Mutex":     {"lock": {op: "MutexAcquire", hold: waitMutex, wait: waitMutex, rival: tryMutex}},
	"FairMutex": {"lock": {op: "FairMutexAcquire", hold: waitFair, wait: waitFair, rival: tryFair}},
	"RWMutex": {
		"write": {op: "RWMutexWriteAcquire", hold: waitWriter, wait: waitWriter, rival: tryReader},
		"read":  {op: "RWMutexReadAcquire", hold: waitWriter, wait: waitReader, rival: tryWriter},
	},
}

// testLateAttemptCannotShorten: a waiter with a 500ms TTL is refused while
// a holder holds; its attempt k reaches node k-1 only later (its request
// timed out there), for the first k up to a majority. Once the holder
// releases, the waiter holds, extends its lease to 10s, and then those
// attempts land, with the waiter's token and a 500ms TTL: they must not
// shorten the lease, or a rival acquires 1s later while it is valid.
// (On one node the attempt that times out fails the Lock: nothing lands
// late under a lease.)
func testLateAttemptCannotShorten(primitive string) func(*testing.T, env) {
	return byKind(waitedLeases[primitive], lateAttemptCannotShorten)
}

func lateAttemptCannotShorten(t *testing.T, e env, k waitedLease) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	quorum := len(e.addrs)/2 + 1
	w, fds := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Op == k.op && c.Node < quorum && c.N == c.Node+1 {
			return later
		}
		return faults.Fault{}
	}, core.WithTTL(500*time.Millisecond), core.WithNodeTimeout(200*time.Millisecond))
	h, err := k.hold(ctx, e.client(t, core.WithTTL(10*time.Second)), n)
	if err != nil {
		t.Fatal(err)
	}
	got := startTaking(ctx, k.wait, w, n)
	awaitCalls(t, fds[quorum-1], k.op, quorum, got)
	if err := h.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("the waiter's Lock after the holder's release: %v", r.err)
	}
	l := r.l
	defer l.Unlock(ctx)
	if err := l.Extend(ctx, 10*time.Second); err != nil {
		t.Fatalf("Extend(10s): %v", err)
	}
	flush(fds) // the held-back attempts land now
	time.Sleep(time.Second)
	when := fmt.Sprintf("1s after attempts of the waiter, held back on nodes 0 to %d, landed behind its Extend(10s)", quorum-1)
	rivalRefused(t, ctx, l, func() (*core.Lease, error) { return k.rival(ctx, e.client(t, unhurried), n) }, when)
}
