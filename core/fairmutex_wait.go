package core

import (
	"context"
	"crypto/rand"
	"errors"
	"time"
)

// FairMutex and RWMutex keep their waiters in Redis, each entry with its own
// lapse time in server time, refreshed by the waiter's every attempt. A
// waiter that dies (or whose Client is abandoned) stops refreshing and its
// entry lapses, so it never holds the others up for longer than that; one
// that gives up (its ctx ends, its attempts run out) takes its entry out at
// once. Every waiter has a ticket key, "<prefix>{name}<suffix>:t:<token>".
// A release that grants a waiter the lock (a FairMutex, an RWMutex's write
// lock) tells the waiter's Client so (see notify_grant.go), and one that
// frees the lock for waiters that must attempt (an RWMutex's readers)
// wakes them the same way; under Notify the message reaches only that
// Client (see lib/tell.lua).

// lineTimes are a waiter's timings: its entry lapses after wait without a
// refresh, and it attempts (so refreshes) at least every 2×retry plus a
// round trip, under either strategy (see lineOptions). With the default
// node timeout wait is the TTL: a dead waiter holds the line up no longer
// than a dead holder would.
func lineTimes(o *options) (wait, retry time.Duration) {
	retry = o.ttl / 4
	wait = max(o.ttl, 2*retry+2*o.perNodeTimeout())
	return wait.Round(time.Millisecond), retry
}

// lineOptions are o for waiting in line: the backoff is capped at retry,
// so that neither Poll's sleep nor Notify's jitter outlasts the waiter's
// entry.
func lineOptions(o options, retry time.Duration) options {
	o.backoff.Cap = max(min(o.backoff.Cap, retry), time.Millisecond)
	o.backoff.Base = min(o.backoff.Base, o.backoff.Cap)
	return o
}

// waiterToken is the token of a waiter in line: its ticket key, the
// tickets prefix and this token, names the Client, which a release's
// grant or wake-up reaches under Notify (see lib/tell.lua).
func (c *Client) waiterToken() string { return c.id + ":" + rand.Text() }

// waitInLine is Lock for a primitive whose waiters queue in Redis: it runs
// the shared wait loop on the waiter's ticket, retrying at most every
// retry even when the holder's TTL is longer, and on failure (ctx ended,
// attempts ran out, no quorum) takes the waiter out of line on every node.
// A Client closed meanwhile leaves its entries to lapse. Under Notify the
// ticket is registered, and a lease that grants gave the waiter (see
// notify_grant.go) saves it an attempt; attempt notes in g what the nodes
// answered. g is nil under Poll: no one tells the waiter of a grant.
func waitInLine(ctx context.Context, c *Client, o *options, name, tickets, token string, out hold,
	attempt func(ctx context.Context, g *grants) (*Lease, time.Duration, error)) (*Lease, error) {
	_, retry := lineTimes(o)
	wo := lineOptions(*o, retry)
	ticketKey := tickets + token
	t, g := &ticket{}, (*grants)(nil) // t stands in under Poll: no grant reaches it
	if n, ok := c.wait.(*notifier); ok && o.wait == Notify {
		t = n.register(ticketKey, token, nil)
		g = &t.grants
		defer n.dropTicket(t)
	}
	l, err := acquire(ctx, c, &wo, ticketKey, func(ctx context.Context) (*Lease, time.Duration, error) {
		if l, _ := t.grantedLease(c, o, name, out); l != nil {
			return l, 0, nil
		}
		t.sent = time.Now()
		l, hint, err := attempt(ctx, g)
		if hint < 0 || hint > retry {
			hint = retry
		}
		return l, hint, err
	})
	if err != nil && !c.closed.Load() {
		newLease(c, name, *o, out, 0).release(ctx, func(int) bool { return true })
	}
	return l, err
}

// grantRound is one Redlock round for an attempt whose nodes answer with a
// grant: it asks every node at once and keeps the lease h when a majority
// granted and validity is left, after durable made the fencing token
// durable (nil: the lease is not exclusive and has no such step). On
// failure it releases undo on every node that granted or may have, and
// returns the holders' shortest remaining TTL as a hint.
func grantRound(ctx context.Context, c *Client, o *options, name string, h, undo hold,
	ask func(context.Context, int, *node) (grant, error),
	durable func(context.Context, []reply[grant], int64) bool) (*Lease, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if c.closed.Load() {
		return nil, 0, ErrClosed
	}
	start := time.Now()
	replies := fanout(ctx, c, o, ask)
	granted, fence, holderTTL := tally(replies)
	if granted >= c.quorum {
		if _, ok := o.validUntil(start, o.ttl); ok {
			if len(c.nodes) == 1 || !o.fencing || durable == nil || durable(ctx, replies, fence) {
				if until, ok := o.validUntil(start, o.ttl); ok {
					l := newLease(c, name, *o, h, uint64(fence))
					l.start(until)
					return l, 0, nil
				}
			}
		}
	}
	newLease(c, name, *o, undo, 0).release(ctx, func(i int) bool { return replies[i].err != nil || replies[i].v.Acquired })
	if c.closed.Load() { // closed while the round was out: its errors are Close's doing
		return nil, 0, ErrClosed
	}
	if err := notWon(ctx, c, replies); !errors.Is(err, ErrNotAcquired) {
		return nil, 0, err
	}
	return nil, holderTTL, ErrNotAcquired
}

// fenceDurable makes a quorum's fencing token durable for an exclusive
// lease held as a string key (a FairMutex lock, an RWMutex write lock),
// the way a plain Mutex does.
func fenceDurable(c *Client, o *options, lock, fence, token string) func(context.Context, []reply[grant], int64) bool {
	return func(ctx context.Context, replies []reply[grant], chosen int64) bool {
		h := mutexHold{keys: keyNames{lock: lock, fence: fence}, holder: token}
		return h.makeFenceDurable(ctx, c, o, replies, chosen)
	}
}

// withOptions returns the Client's options overridden by opts.
func (c *Client) withOptions(opts []Option) options {
	o := c.opts
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// checkNotOwned reports WithOwner given to a primitive that is not
// reentrant.
func checkNotOwned(o *options, what string) error {
	if o.owner != "" {
		return invalid("%s is not reentrant: WithOwner(%q) applies to Mutex only; pass WithOwner(\"\") to override a Client default", what, o.owner)
	}
	return nil
}

// boolInt is 1 for true and 0 for false, for script arguments.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
