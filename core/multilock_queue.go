package core

import (
	"context"
	"crypto/rand"
	"errors"
	"slices"
	"time"
)

// A MultiLock waits under Notify in the queue of the name it is blocked
// at, as a Mutex waiter does (see notify_queue.go), with one ticket per
// name and one token for its attempts (a fresh one after an undo that
// failed on some node, see ticket.rotate): a release of that name grants
// it to the waiter, which its next attempt takes as its own, and nobody
// barges in. It waits in one queue at a time: once an attempt blocked at
// another name, it leaves the queues it joined before, handing on what a
// release granted it there, so that it never holds a name while it waits
// for another (which could deadlock MultiLocks over overlapping names).
// On a single server the attempt's script does that leaving itself, and a
// release of the same names may grant the waiter all of them at once
// (multi_release.lua): where every node does so, grants from a majority
// give the waiter its lease without a request, as they give a Mutex
// waiter.

// lockQueued is Lock under Notify, for a MultiLock without an owner.
func (m *MultiLock) lockQueued(ctx context.Context, n *notifier) (*Lease, error) {
	o := &m.opts
	stem, wake := rand.Text(), make(chan struct{}, 1)
	tickets := make([]*ticket, len(m.names))
	for i, name := range m.names {
		tickets[i] = n.newTicket(o, name, stem, wake)
		defer n.dropTicket(tickets[i])
	}
	token := tickets[0].token
	h, ho := m.hold(token)
	// Whether a node takes all names in one script does not depend on the
	// token, which a rotation changes while leaves of the last one run.
	first := h
	whole := func(i int) bool { return first.whole(m.c.nodes[i]) }
	grantsAll := !slices.ContainsFunc(m.c.nodes, func(nd *node) bool { return !h.whole(nd) })
	joined := make([]bool, len(m.names)) // the names whose queues may hold the ticket
	// leave takes the tickets out of line on the nodes where on(i), but at
	// except; keep as in leaveQueue.
	leave := func(on func(int) bool, except int, keep, forGood bool) {
		for i, j := range joined {
			if j && i != except {
				leaveQueue(ctx, m.c, o, m.keys[i], tickets[i], on, keep, forGood)
				joined[i] = false
			}
		}
	}
	// won takes the ticket out of line on the nodes where on(i), once the
	// waiter holds its lease. A grant that reached it there late is part
	// of the lease now, which the lease's release gives back on every
	// node: handing it on now would wake a waiter that cannot win. Every
	// name's line: on a single server a release grants all the names at
	// once, maybe to a token the waiter gave up, which is passed on.
	leaveAll := func(ctx context.Context, on func(int) bool, keep bool) {
		for i := range m.names {
			leaveQueue(ctx, m.c, o, m.keys[i], tickets[i], on, keep, true)
		}
	}
	// wonOn is where won left: the lease's release leaves there again, for
	// good (left), as a Mutex lease's release marks its ticket
	// (release_or_mark.lua). Else a won leave that was lost until the
	// release, or lands after it, leaves the ticket in line there, and a
	// later release there grants the name to a lease that is over, which
	// holds it for its TTL.
	var wonOn func(int) bool
	won := func(on func(int) bool) {
		wonOn = on
		m.c.inBackground(func() { leaveAll(ctx, on, true) })
	}
	left := func(l *Lease) *Lease {
		if l != nil && wonOn != nil {
			on := wonOn
			l.left = func(ctx context.Context) { leaveAll(ctx, on, false) }
		}
		return l
	}
	// quit leaves every name's queue on the nodes where on(i), passing on
	// what a release granted the waiter there, also to a token it gave up
	// (a release on a single server grants every name), and, on a single
	// server, gives back what its own token or the last few it gave up
	// hold there. A give-back that failed is asked again in the
	// background, as a leave is (leaveAgain).
	quit := func(on func(int) bool) {
		leaveAll(ctx, on, false)
		holds := []multiHold{h}
		for _, token := range tickets[0].earlier {
			eh, _ := m.hold(token)
			holds = append(holds, eh)
		}
		giveBack := func(ctx context.Context, on func(int) bool) []reply[bool] {
			return detached(ctx, m.c, &ho, func(ctx context.Context, i int, nd *node) (bool, error) {
				if !on(i) || !whole(i) {
					return false, nil
				}
				var errs []error
				for _, h := range holds {
					_, err := h.release(ctx, nd)
					errs = append(errs, err)
				}
				return true, errors.Join(errs...)
			})
		}
		leaveAgain(ctx, m.c, o.ttl, giveBack(ctx, on), giveBack)
	}
	var (
		last    []reply[[]grant] // the last attempt's replies
		blocked int              // the name it stopped at
	)
	q := line{n: n, o: o,
		attempt: func(ctx context.Context, join bool) (*Lease, *ticket, string, time.Duration, error) {
			sent := time.Now()
			for _, t := range tickets {
				t.join, t.sent = join, sent
			}
			l, miss, replies, err := m.attempt(ctx, token, tickets)
			if join {
				queuedAt(replies, joined)
			}
			if errors.Is(err, errRejoin) {
				for _, t := range tickets {
					t.rotate()
				}
				token = tickets[0].token
				h, ho = m.hold(token)
				err = ErrNotAcquired
			}
			if err == nil && len(m.c.nodes) > 1 {
				// Where a node did not grant every name, the ticket may be
				// queued at the name it stopped at.
				missed := func(i int) bool { return replies[i].err != nil || !allGranted(replies[i].v, len(m.names)) }
				won(missed)
			}
			last, blocked = replies, miss.blocked
			return l, tickets[blocked], m.keys[blocked].lock, miss.holderTTL, err
		},
		// A single server that answered left the other queues already.
		// The waiter keeps what a release granted it meanwhile (keep): its
		// next attempt takes it, or undoes it and hands it on. A leave
		// that hands on could land late, after the waiter joined that
		// queue again and was granted the name as part of a lease, and
		// take the name from under the lease.
		refused: func() {
			// The leave's filter runs on nodes' goroutines that may
			// outlast it: it keeps this attempt's replies.
			replies := last
			leave(func(i int) bool { return !whole(i) || replies[i].err != nil }, blocked, true, false)
		},
		quit: func(err error) error {
			quit(everyNode)
			return err
		},
		granted: func(ctx context.Context) *Lease {
			if !grantsAll {
				return nil
			}
			return m.grantedLease(ctx, tickets, h.marking(tickets), &ho, won)
		},
	}
	l, err := q.wait(ctx)
	return left(l), err
}

// grantedLease is the lease that grants of all names from a majority of
// nodes gave a waiter, through any of its tickets (see notify_grant.go).
// The waiter then leaves (won) the queues of the nodes that did not grant
// it.
func (m *MultiLock) grantedLease(ctx context.Context, tickets []*ticket, h multiHold, o *options, won func(func(int) bool)) *Lease {
	for _, t := range tickets {
		l, granted := t.grantedLease(ctx, m.c, o, m.names, h)
		if l == nil {
			continue
		}
		if len(m.c.nodes) > 1 {
			won(func(i int) bool { return !granted[i] })
		}
		return l
	}
	return nil
}

// queuedAt marks the names at which an attempt that joined may have
// queued its ticket on some node: the one a node refused, or any it had
// not passed when its call failed (one script for all names fails
// without saying where it stopped).
func queuedAt(replies []reply[[]grant], joined []bool) {
	for _, r := range replies {
		k := len(r.v)
		switch {
		case r.err != nil:
			for j := k; j < len(joined); j++ {
				joined[j] = true
			}
		case r.err == nil && k > 0 && !r.v[k-1].Acquired:
			joined[k-1] = true
		}
	}
}

// allGranted reports whether a node's reply granted all n names.
func allGranted(gs []grant, n int) bool { return len(gs) == n && gs[n-1].Acquired }
