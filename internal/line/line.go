package line

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"
)

// Line is a waiter in the queues of Notify (see tickets.go): a Mutex
// waiter with one ticket, or a MultiLock waiter with one per name, which
// waits in the queue of the name its last attempt stopped at. Wait is the
// loop both run; what differs is in the functions. L is the lease.
type Line[L comparable] struct {
	N *Notifier
	O Options
	// Attempt runs one attempt, queuing its tickets when join, and
	// returns the ticket of the name it was refused at and the holder's
	// TTL there.
	Attempt func(ctx context.Context, join bool) (l L, blocked *Ticket, holderTTL time.Duration, err error)
	// Refused, when set, runs after a refused attempt, before the waiter
	// waits for its blocked ticket.
	Refused func()
	// Quit leaves the queues for good, handing on what was granted to the
	// waiter there, and returns err.
	Quit func(err error) error
	// Granted is the lease that grants gave the waiter, if any (else the
	// zero L).
	Granted func(ctx context.Context) L
}

// Wait attempts until the waiter holds its lease, queued once the
// Client's channel is subscribed: an uncontended Lock then costs one round
// trip, and a contended one subscribes and tries again at once, so that no
// release between its attempts goes unheard. Between attempts it waits for
// a release to tell its ticket, and at worst retries at the holder's TTL
// (see waitTicket): a holder that died, or a lock key deleted by hand, is
// noticed then. It listens to no keyspace event: every release by the
// library tells the ticket, and a subscription to the lock key would cost
// every contended acquisition a subscription, an attempt more (made after
// it, so as to miss no event) and an unsubscription.
func (q *Line[L]) Wait(ctx context.Context) (L, error) {
	var zero L
	n, o := q.N, &q.O
	var outage error // the last attempt's, while the servers fail (see Acquire)
	for attempt := 0; ; attempt++ {
		join := n.ticketsReady(o)
		l, t, holderTTL, err := q.Attempt(ctx, join)
		switch {
		case err == nil:
			return l, nil
		case !quorum.Retryable(err):
			return zero, q.Quit(quorum.WaitedOut(err, outage))
		case o.MaxAttempts > 0 && attempt+1 >= o.MaxAttempts:
			return zero, q.Quit(err)
		}
		outage = lastOutage(outage, err)
		if !join {
			n.subscribeTickets(ctx, o)
			if n.ticketsReady(o) {
				continue
			}
		}
		if q.Refused != nil {
			q.Refused()
		}
		if err := n.waitTicket(ctx, o, t, attempt, holderTTL); err != nil {
			return zero, q.Quit(quorum.WaitedOut(err, outage))
		}
		if l := q.Granted(ctx); l != zero {
			return l, nil
		}
	}
}
