package core

import (
	"context"
	"time"
)

// line is a waiter in the queues of Notify (see notify_queue.go): a Mutex
// waiter with one ticket, or a MultiLock waiter with one per name, which
// waits in the queue of the name its last attempt stopped at. wait is the
// loop both run; what differs is in the functions.
type line struct {
	n *notifier
	o *options
	// attempt runs one attempt, queuing its tickets when join, and
	// returns the ticket of the name it was refused at and the holder's
	// TTL there.
	attempt func(ctx context.Context, join bool) (l *Lease, blocked *ticket, key string, holderTTL time.Duration, err error)
	// refused, when set, runs after a refused attempt, before the waiter
	// waits for its blocked ticket.
	refused func()
	// quit leaves the queues for good, handing on what was granted to the
	// waiter there, and returns err.
	quit func(err error) error
	// granted is the lease that grants gave the waiter, if any.
	granted func(ctx context.Context) *Lease
	// heed tells, for the head of a queue, a keyspace event from a node
	// that counts (see notifyWatch.heed); nil: every node's.
	heed func(node int) bool
}

// wait attempts until the waiter holds its lease, queued once the
// Client's channel is subscribed: an uncontended Lock then costs one round
// trip, and a contended one subscribes and tries again at once, so that no
// release between its attempts goes unheard. Between attempts it waits for
// a release to tell its ticket, or, at the head of a queue, for an event
// that frees the lock key (a holder that died), and at worst retries at the
// holder's TTL (see waitTicket).
func (q *line) wait(ctx context.Context) (*Lease, error) {
	n, o := q.n, q.o
	var head *notifyWatch // the lock key's subscription, for the head of the queue
	defer func() {
		if head != nil {
			head.stop()
		}
	}()
	for attempt := 0; ; attempt++ {
		join := n.ticketsReady(o)
		l, t, key, holderTTL, err := q.attempt(ctx, join)
		switch {
		case err == nil:
			return l, nil
		case !retryable(err), o.maxAttempts > 0 && attempt+1 >= o.maxAttempts:
			return nil, q.quit(err)
		}
		if !join {
			n.subscribeTickets(ctx, o)
			if err := n.refusal(); err != nil {
				return nil, q.quit(err)
			}
			if n.ticketsReady(o) {
				continue
			}
		}
		if q.refused != nil {
			q.refused()
		}
		if head != nil && head.key != key {
			head.stop()
			head = nil
		}
		if head == nil && t.first.Load() {
			// Subscribed only now: attempt again before waiting, so that
			// a DEL in between is not missed.
			head = &notifyWatch{n: n, key: key, o: o, ctx: ctx, wake: t.wake, heed: q.heed}
			if err := n.join(ctx, head); err != nil {
				head = nil
				return nil, q.quit(err)
			}
			continue
		}
		if err := n.waitTicket(ctx, o, t, attempt, holderTTL); err != nil {
			return nil, q.quit(err)
		}
		if l := q.granted(ctx); l != nil {
			return l, nil
		}
	}
}
