package core

import (
	"context"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"
)

// A release that hands a queued waiter the lock tells its Client the
// waiter's ticket and the fencing token (see notify_queue.go). The waiter
// holds the lock without a request of its own once grants from a majority
// of nodes are live: granted after its last attempt, so that its validity
// counts from that attempt's start, and not undone since. A grant its own
// attempt found is not news (the attempt used it, or undid it on failure),
// nor is any from a node on which an attempt failed, as the attempt's
// cleanup may undo a grant made meanwhile.

// grants is what a waiter heard of grants and what its attempts found, by
// node.
type grants struct {
	mu    sync.Mutex
	heard []int64 // the highest fencing token a grant on the node published
	found []int64 // the highest token an attempt found granted there; MaxInt64 after one failed there
}

func newGrants(nodes int) grants {
	return grants{heard: make([]int64, nodes), found: make([]int64, nodes)}
}

// handedOn wakes the waiter of a ticket of which node's release told the
// Client: a fencing token when it granted the lock, 0 when it reserved
// it.
func (n *notifier) handedOn(node int, ticketKey, message string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t := n.tickets[ticketKey]
	if t == nil {
		return
	}
	if f, err := strconv.ParseInt(message, 10, 64); err == nil && f > 0 {
		t.grants.hear(node, f)
	}
	t.signal()
}

func (g *grants) hear(node int, fence int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.heard[node] = max(g.heard[node], fence)
}

// observe notes one node's answer to an attempt. A nil g (a waiter that
// hears no grants: TryLock, or Poll) notes nothing.
func (g *grants) observe(node int, r grant, err error) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case err != nil:
		g.found[node] = math.MaxInt64
	case r.Acquired:
		g.found[node] = max(g.found[node], r.Fence)
	}
}

// live returns the nodes whose grant is live and the token they give: the
// highest, and ok only when a quorum granted it and, with fencing, each
// drew the same token, so that it is durable already (see the package
// documentation).
func (g *grants) live(quorum int, fencing bool) (nodes []bool, fence int64, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	nodes = make([]bool, len(g.heard))
	count, same := 0, true
	for i, f := range g.heard {
		if f > g.found[i] {
			nodes[i] = true
			count++
			same = same && (fence == 0 || f == fence)
			fence = max(fence, f)
		}
	}
	return nodes, fence, count >= quorum && (same || !fencing)
}

// grantSpread bounds how long a waiter with live grants from fewer nodes
// than a quorum waits for the others' before it attempts: a release goes
// to every node at once, so their grants arrive close together, and an
// attempt costs a round trip.
const grantSpread = time.Millisecond

// awaitGrants waits up to grantSpread for a quorum of live grants when
// some are in.
func (t *ticket) awaitGrants(ctx context.Context, quorum int, fencing bool) {
	if nodes, _, ok := t.grants.live(quorum, fencing); ok || !slices.Contains(nodes, true) {
		return
	}
	timer := time.NewTimer(grantSpread)
	defer timer.Stop()
	for {
		select {
		case <-t.wake:
			if _, _, ok := t.grants.live(quorum, fencing); ok {
				return
			}
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// grantedLease is the lease live grants gave a waiter, valid from the
// start of its last attempt, before the grants and their TTL. It returns
// nil when there is none or no validity is left; the waiter then attempts,
// which takes a lock granted to it as its own.
func (t *ticket) grantedLease(c *Client, o *options, name string, h hold) (*Lease, []bool) {
	nodes, fence, ok := t.grants.live(c.quorum, o.fencing)
	if !ok {
		return nil, nil
	}
	until, ok := o.validUntil(t.sent, o.ttl)
	if !ok {
		return nil, nil
	}
	l := newLease(c, name, *o, h, uint64(fence))
	l.start(until)
	return l, nodes
}

// grantedLease is a Mutex waiter's lease from grants (an owner's waiter
// is reserved the lock, never granted it). The ticket leaves the queues of
// the nodes that did not grant it.
func (m *Mutex) grantedLease(ctx context.Context, t *ticket) *Lease {
	if m.opts.owner != "" {
		return nil
	}
	l, granted := t.grantedLease(m.c, &m.opts, m.name, m.hold(t.token))
	if l != nil && len(m.c.nodes) > 1 {
		m.leaveBehind(ctx, t, func(i int) bool { return !granted[i] })
	}
	return l
}
