package core

import (
	"context"
	"crypto/rand"
	"errors"
)

// A MultiLock waits under Notify in the queue of the name it is blocked
// at, as a Mutex waiter does (see notify_queue.go), with one ticket per
// name and one token for all its attempts: a release of that name grants
// it to the waiter, which its next attempt takes as its own, and nobody
// barges in. It waits in one queue at a time: once an attempt blocked at
// another name, it leaves the queues it joined before, handing on what a
// release granted it there, so that it never holds a name while it waits
// for another (which could deadlock MultiLocks over overlapping names).

// lockQueued is Lock under Notify, for a MultiLock without an owner.
func (m *MultiLock) lockQueued(ctx context.Context, n *notifier) (*Lease, error) {
	o := &m.opts
	token, wake := rand.Text(), make(chan struct{}, 1)
	tickets := make([]*ticket, len(m.names))
	for i, name := range m.names {
		tickets[i] = n.newTicket(o, name, token, wake)
		defer n.dropTicket(tickets[i])
	}
	joined := make([]bool, len(m.names)) // the names whose queues may hold the ticket
	leave := func(on func(int) bool, except int) {
		for i, j := range joined {
			if j && i != except {
				leaveQueue(ctx, m.c, o, m.keys[i], tickets[i], on)
				joined[i] = false
			}
		}
	}
	var head *notifyWatch // the lock key of the name waited for, at the head of its queue
	defer func() {
		if head != nil {
			head.stop()
		}
	}()
	everywhere := func(int) bool { return true }
	for attempt := 0; ; attempt++ {
		join := n.ticketsReady.Load()
		for _, t := range tickets {
			t.join = join
		}
		l, miss, replies, err := m.attempt(ctx, token, tickets)
		if join {
			queuedAt(replies, joined)
		}
		switch {
		case err == nil:
			if len(m.c.nodes) > 1 {
				// Where a node did not grant every name, its undo left the
				// ticket queued at the name it stopped at.
				missed := func(i int) bool { return replies[i].err != nil || !allGranted(replies[i].v, len(m.names)) }
				m.c.inBackground(func() { leave(missed, -1) })
			}
			return l, nil
		case !errors.Is(err, ErrNotAcquired), o.maxAttempts > 0 && attempt+1 >= o.maxAttempts:
			leave(everywhere, -1)
			return nil, err
		}
		if !join {
			if n.subscribeTickets(ctx, o); n.ticketsReady.Load() {
				continue
			}
		}
		leave(everywhere, miss.blocked)
		t := tickets[miss.blocked]
		if head != nil && head.key != m.keys[miss.blocked].lock {
			head.stop()
			head = nil
		}
		if head == nil && t.first.Load() {
			// Subscribed only now: attempt again before waiting, so that
			// a DEL in between is not missed.
			head = &notifyWatch{n: n, key: m.keys[miss.blocked].lock, o: o, ctx: ctx, wake: wake}
			if err := n.join(ctx, head); err != nil {
				head = nil
				leave(everywhere, -1)
				return nil, err
			}
			continue
		}
		if err := n.waitTicket(ctx, o, t, attempt, miss.holderTTL); err != nil {
			leave(everywhere, -1)
			return nil, err
		}
	}
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
