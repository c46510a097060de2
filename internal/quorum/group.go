// Package quorum is the Redlock round, shared by every primitive: a group
// of independent nodes, asking every node once (Vote), counting a
// majority, the validity a grant leaves (Timing), re-sending what a
// server did not run, replica acknowledgements, and the failover window
// of a Redis Cluster. It knows nothing of what the primitives store: a
// Round is told what to ask, how to read the answers and what undoes
// them.
package quorum

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// The outcomes of a round that the primitives return as they are (the
// public package documents them).
var (
	ErrNotAcquired = errors.New("redlock: not acquired: held by another owner (or too few permits free); retry later, or wait with Lock, RLock or Acquire")
	ErrNoQuorum    = errors.New("redlock: no quorum: a majority of nodes did not answer")
	ErrServerError = errors.New("redlock: a server answered with an error")
	ErrClosed      = errors.New("redlock: client closed")

	// ErrUnavailable: the nodes that cost the majority answered that they
	// cannot serve the call yet (a Redis Cluster slot migrating, a
	// failover, a server loading its data or busy). It passes by itself.
	ErrUnavailable = errors.New("redlock: unavailable: the servers cannot serve the call right now (a slot migrating, a failover, a server loading or busy); it passes: retry, or wait with Lock")

	// ErrReplicasBehind: a master's replicas did not acknowledge a grant
	// within the node timeout, so the grant did not count.
	ErrReplicasBehind = errors.New("redlock: replicas behind: a master's replicas did not acknowledge the grant within the node timeout; check the replicas and their links, or lower WithReplicaAcks")

	// ErrEviction: a server may evict the lock keys (see Evicting).
	ErrEviction = errors.New("redlock: a server may evict the lock keys")
)

// errUnreachable follows ErrNoQuorum: nodes did not answer.
var errUnreachable = errors.New("check that the Redis servers are up and reachable")

// Group is the set of independent nodes a Client binds: one node grants
// alone; N nodes grant by a majority, N/2+1.
type Group struct {
	Nodes  []*Node
	Quorum int

	closed     atomic.Bool
	closing    chan struct{}  // closed by Close
	sending    sync.RWMutex   // read-held by each vote; Close takes it to wait for them
	background sync.WaitGroup // what runs on after a call returned (InBackground)
}

// NewGroup makes a group of drivers, one per independent node, whose
// grants wait for replicaAcks replicas (-1: as many as the nodes have,
// up to one; see the public WithReplicaAcks). It sends nothing.
func NewGroup(drivers []driver.Driver, log *slog.Logger, replicaAcks int) (*Group, error) {
	if len(drivers) == 0 {
		return nil, fmt.Errorf("%w: no nodes; pass one driver per Redis node", driver.ErrInvalid)
	}
	g := &Group{Quorum: len(drivers)/2 + 1, closing: make(chan struct{})}
	for i, d := range drivers {
		if d == nil {
			return nil, fmt.Errorf("%w: driver %d is nil", driver.ErrInvalid, i)
		}
		single, _ := d.(driver.SingleServer)
		replicated, _ := d.(driver.Replicated)
		if replicated == nil && replicaAcks > 0 {
			return nil, fmt.Errorf("%w: WithReplicaAcks(%d): the %s driver of node %d cannot wait for replicas", driver.ErrInvalid, replicaAcks, d.Name(), i)
		}
		n := &Node{Index: i, Driver: d, log: log, natives: map[driver.Native]bool{},
			SingleServer: single != nil && single.SingleServer(), Cluster: single != nil && !single.SingleServer(),
			replicated: replicated, replicaAcks: replicaAcks}
		n.acksProbed.Store(-1)
		g.Nodes = append(g.Nodes, n)
	}
	return g, nil
}

// Closed reports whether Close began.
func (g *Group) Closed() bool { return g.closed.Load() }

// Closing is closed once Close began.
func (g *Group) Closing() <-chan struct{} { return g.closing }

// Close stops the group: the votes sending finish, later ones send
// nothing (their replies are ErrClosed), and it returns once what runs in
// the background ended. It reports whether it closed the group (false:
// closed before).
func (g *Group) Close() bool {
	if g.closed.Swap(true) {
		return false
	}
	close(g.closing)
	// A barrier: it waits for the votes sending under the read lock;
	// later ones see closed and send nothing.
	g.sending.Lock()
	//lint:ignore SA2001 the empty critical section is the barrier above
	g.sending.Unlock()
	g.background.Wait()
	return true
}

// InBackground runs f in the background unless the group is closed;
// Close waits for it.
func (g *Group) InBackground(f func()) {
	if g.closed.Load() {
		return
	}
	g.background.Add(1)
	go func() {
		defer g.background.Done()
		f()
	}()
}

// Timing is what bounds a call in time: the TTL of what it grants, how
// long one request to one node may take, and the clock drift allowed for,
// as a fraction of the TTL.
type Timing struct {
	TTL         time.Duration
	NodeTimeout time.Duration
	DriftFactor float64
}

// Drift is the part of the TTL kept back for clock drift.
func (t Timing) Drift() time.Duration {
	return time.Duration(float64(t.TTL)*t.DriftFactor) + 2*time.Millisecond
}

// ValidUntil returns the end of the validity window of a grant of the TTL
// requested at start (taken before the first send): start + TTL − drift.
// The time the request took is inside the window, not subtracted again.
// ok is false once the window has closed.
func (t Timing) ValidUntil(start time.Time) (until time.Time, ok bool) {
	until = start.Add(t.TTL - t.Drift())
	return until, time.Until(until) > 0
}

// Held is how many nodes answered true.
func Held(replies []Reply[bool]) int {
	n := 0
	for _, r := range replies {
		if r.Err == nil && r.V {
			n++
		}
	}
	return n
}

// Jitter is exponential backoff with full jitter: a random time in
// [0, min(ceiling, base×multiplier^n)).
func Jitter(base, ceiling time.Duration, multiplier float64, n int) time.Duration {
	c := float64(base)
	for i := 0; i < n && c < float64(ceiling); i++ {
		c *= multiplier
	}
	c = min(c, float64(ceiling))
	if c < 1 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(c)))
}

// Retry asks call (call(ctx, on)) again, in the background, on the nodes
// where replies failed, until it lands on each, the group closes, or
// within has passed (by then what it hands on or takes back has lapsed).
// A call that timed out may not have landed: an undo, or a waiter's leave,
// whose entry would then stay until it lapses, where a release may grant
// or wake a waiter that is gone; a node that times out a few times in a
// row would keep such a grant for its whole TTL. call must be idempotent:
// one that did land is asked again to no effect. The retries outlive
// ctx, whose caller has usually given up.
func Retry[T any](ctx context.Context, g *Group, within time.Duration, replies []Reply[T], call func(ctx context.Context, on func(int) bool) []Reply[T]) {
	failed := func(i int) bool { return replies[i].Err != nil }
	if !slices.ContainsFunc(replies, func(r Reply[T]) bool { return r.Err != nil }) {
		return
	}
	until, bg := time.Now().Add(within), context.WithoutCancel(ctx)
	g.InBackground(func() {
		for n := 0; ; n++ {
			replies = call(bg, failed)
			if !slices.ContainsFunc(replies, func(r Reply[T]) bool { return r.Err != nil }) {
				return
			}
			// A random pause below 50ms at first, as most failures are
			// one lost packet, doubling up to below a second (two
			// retries a second on average) while a node fails.
			pause := Jitter(50*time.Millisecond, time.Second, 2, n)
			if time.Now().Add(pause).After(until) {
				return
			}
			select {
			case <-g.closing:
				return
			case <-time.After(pause):
			}
		}
	})
}
