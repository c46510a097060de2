package core

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"
)

// FairMutex and RWMutex keep their waiters in Redis, each entry with its own
// lapse time in server time, refreshed by the waiter's every attempt. A
// waiter that dies (or whose Client is abandoned) stops refreshing and its
// entry lapses, so it never holds the others up for longer than that; one
// that gives up (its ctx ends, its attempts run out) takes its entry out at
// once. Every waiter has a ticket, "<prefix>{name}<suffix>:t:<token>", a
// field of the line's tickets hash "<prefix>{name}<suffix>:t".
// A release that grants a waiter the lock (a FairMutex, an RWMutex's write
// lock) tells the waiter's Client so (see line.Grants), and one that
// frees the lock for waiters that must attempt (an RWMutex's readers)
// wakes them the same way; under Notify the message reaches only that
// Client (see lib/tell.lua).

// lineTimes are a waiter's timings: its entry lapses after wait without a
// refresh, and it attempts (so refreshes) at least every 2×retry plus a
// round trip, under either strategy (see lineOptions). With the default
// node timeout and a TTL of 200ms or more wait is the TTL: a dead waiter
// holds the line up no longer than a dead holder would.
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

// waiterToken is the token of a waiter in line: its ticket, the tickets
// hash's name, ":" and this token, names the Client, which a release's
// grant or wake-up reaches under Notify (see lib/tell.lua). It ends with
// o's metadata tag.
func (c *Client) waiterToken(o *options) string { return c.id + ":" + rand.Text() + o.metaTag() }

// lineAttempt is one attempt of a waiter in line with token; g is nil
// under Poll, where no one tells the waiter of a grant. heard says that
// the Client hears on every node what releases tell its tickets (under
// Notify, once it subscribed its channel there): a release passes over a
// waiter that a node sees no one listen for (see lib/pass_deaf.lua).
type lineAttempt func(ctx context.Context, token string, g *line.Grants, heard bool) (*Lease, time.Duration, error)

// rejoinError is a waiter's attempt that failed with cause, and whose undo
// failed on some node: that undo may still land there, later, and delete
// whatever holds the token then (a grant, or a later attempt's lease).
// The waiter leaves the line and joins again with a fresh token (see
// waitOn). It does not wrap cause: it is no refusal to wait on.
type rejoinError struct{ cause error }

func (r rejoinError) Error() string {
	return "core: an undo may land late; rejoin with a fresh token (" + r.cause.Error() + ")"
}

// rejoined returns the cause of err when err is a rejoinError.
func rejoined(err error) (cause error, ok bool) {
	var r rejoinError
	ok = errors.As(err, &r)
	return r.cause, ok
}

// waitInLine is Lock for a primitive whose waiters queue in Redis: it runs
// the shared wait loop on the waiter's ticket, retrying at most every
// retry even when the holder's TTL is longer, and on failure (ctx ended,
// attempts ran out, no quorum) takes the waiter out of line on every node.
// A Client closed meanwhile leaves its entries to lapse. Under Notify the
// ticket is registered, and a lease that grants gave the waiter (see
// line.Grants) saves it an attempt; attempt notes in g what the nodes
// answered. ids is the prefix of the waiters' ticket ids (a ticket is
// ids and the token). out is the hold that takes a waiter with token out
// of line.
func waitInLine(ctx context.Context, c *Client, o *options, names leaseNames, ids string, out func(token string) hold, attempt lineAttempt) (*Lease, error) {
	return waitOn(ctx, c, o, names, func(token string) string { return ids + token }, true, out, attempt)
}

// waitOn is waitInLine on key(token): the waiter's ticket when ticketed,
// else a key whose release tells the waiter on the key's channel, as its
// keyspace events do (an RWMutex's waiting readers, see rw_release.lua),
// which it watches as a Mutex waiter watches its lock; such a waiter
// hears no grants, and once it holds, it passes the wake-up on to the
// Client's next waiter of key, as a Latch waiter does. An attempt that returns a rejoinError takes the waiter out of
// line, and it joins again with a fresh token: at the place it had with a
// quorum, where the place is the time Lock began; at the back on a single
// server, which gives the places. After an outage it joins again after
// the backoff, as a waiter that keeps its token attempts again.
func waitOn(ctx context.Context, c *Client, o *options, names leaseNames, key func(token string) string, ticketed bool,
	out func(token string) hold, attempt lineAttempt) (*Lease, error) {
	lo := *o
	var outage error // the last rejoin's, while the servers fail
	for n := 0; ; {
		token := c.waiterToken(&lo)
		l, tried, err := waitAs(ctx, c, &lo, names, key(token), ticketed, token, out(token), attempt)
		cause, ok := rejoined(err)
		if !ok {
			return stillWanted(ctx, l, quorum.WaitedOut(err, outage))
		}
		if lo.maxAttempts > 0 {
			if lo.maxAttempts -= tried; lo.maxAttempts <= 0 {
				return nil, cause
			}
		}
		if !quorum.Outage(cause) {
			outage, n = nil, 0
			continue
		}
		outage = cause
		_, retry := lineTimes(&lo)
		if err := line.Backoff(lineOptions(lo, retry).backoff).Sleep(ctx, c.q.Closing(), n); err != nil {
			return nil, quorum.WaitedOut(err, outage)
		}
		n++
	}
}

// waitAs is waitOn with one token, until it holds, fails or must rejoin;
// it also returns how many attempts it made.
func waitAs(ctx context.Context, c *Client, o *options, names leaseNames, key string, ticketed bool, token string, out hold,
	attempt lineAttempt) (*Lease, int, error) {
	_, retry := lineTimes(o)
	wo := lineOptions(*o, retry)
	t, g := &line.Ticket{}, (*line.Grants)(nil) // t stands in under Poll: no grant reaches it
	lo := wo.waiting()
	heard := func() bool { return false }
	if n, ok := c.queues(o); ok && ticketed {
		t = n.Register(key, token, nil)
		g = &t.Grants
		defer n.DropTicket(t)
		heard = func() bool { return n.TicketsReady(&lo) }
	}
	lo.Woken = !ticketed // the release that lets them in tells them on key (rw_release.lua)
	tried := 0
	l, err := line.Acquire(ctx, c.wait, lo, func(ctx context.Context) (*Lease, string, time.Duration, error) {
		if l, _ := grantedLease(ctx, c, o, names, t, out); l != nil {
			return l, key, 0, nil
		}
		t.Sent = time.Now()
		tried++
		l, hint, err := attempt(ctx, token, g, heard())
		if hint < 0 || hint > retry {
			hint = retry
		}
		return l, key, hint, err
	})
	switch {
	case err == nil && !ticketed:
		c.wait.PassOn(key)
	case err != nil && !c.q.Closed():
		leave := func() {
			quorum.Retry(ctx, c.q, o.ttl, releaseOn(ctx, c, o, out, quorum.Every), func(ctx context.Context, on func(int) bool) []quorum.Reply[bool] {
				return releaseOn(ctx, c, o, out, on)
			})
		}
		if _, ok := rejoined(err); ok {
			c.q.InBackground(leave) // the waiter joins again, with another token
		} else {
			leave()
		}
	}
	return l, tried, err
}

// releaseOn releases h on the nodes where on(i), even when ctx was
// cancelled (see quorum.Detached): a lease's hold, or a waiter's, which takes it
// out of line.
func releaseOn(ctx context.Context, c *Client, o *options, h hold, on func(int) bool) []quorum.Reply[bool] {
	return quorum.Detached(ctx, c.q, o.timing(), func(ctx context.Context, i int, n *quorum.Node) (bool, error) {
		if !on(i) {
			return false, nil
		}
		return h.release(ctx, n)
	})
}

// grantRound is one Redlock round (see quorum.Round) for an attempt whose nodes
// answer with a grant: it keeps the lease h, after durable made the
// fencing token durable (nil: the lease is not exclusive and has no such
// step). On failure it releases undo wherever the attempt may have
// landed, and returns the holders' shortest remaining TTL as a hint; when
// some of the attempt may still land and the waiter reuses its token
// (rejoin), a rejoinError.
func grantRound(ctx context.Context, c *Client, o *options, names leaseNames, h, undo hold, rejoin bool,
	ask func(context.Context, int, *quorum.Node) (grant, error),
	durable grantDurable) (*Lease, time.Duration, error) {
	p := quorum.Round[grant]{Ask: ask, Durable: durable, Granted: acquired, Tally: countGrants, MayHold: mayHoldGrant,
		Undo: func(ctx context.Context, n *quorum.Node, _ quorum.Reply[grant]) (bool, error) {
			return undo.release(ctx, n)
		},
	}
	l, r := play(ctx, c, o, names, p, func(quorum.Outcome[grant]) hold { return h }, nil)
	if rejoin && quorum.Retryable(r.Err) && r.Unsure {
		return nil, 0, rejoinError{r.Err}
	}
	return l, r.Hint, r.Err
}

// grantDurable is a round's Durable step (see quorum.Round) for an attempt
// whose nodes answer with a grant.
type grantDurable = func(ctx context.Context, replies []quorum.Reply[grant], wins func(int) bool, fence int64) bool

// fenceDurable makes a quorum's fencing token durable for an exclusive
// lease held as a string key (a FairMutex lock, an RWMutex write lock),
// the way a plain Mutex does.
func fenceDurable(c *Client, o *options, lock, fence, token string) grantDurable {
	return func(ctx context.Context, replies []quorum.Reply[grant], _ func(int) bool, chosen int64) bool {
		h := mutexHold{keys: keyNames{lock: lock, fence: fence}, holder: token, idle: o.idle}
		return h.makeFenceDurable(ctx, c, o, replies, chosen)
	}
}

// boolInt is 1 for true and 0 for false, for script arguments.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// lineHold is what the hold of a lock with a line of waiters (FairMutex,
// RWMutex) knows besides its keys.
type lineHold struct {
	token string
	keep  bool          // an attempt's undo, which keeps the waiter in line
	idle  time.Duration // how long the fencing counter outlives its last draw
	ttl   time.Duration // how long a late attempt of a waiter that left is refused
}

func newLineHold(o *options, token string, keep bool) lineHold {
	return lineHold{token: token, keep: keep, idle: o.idle, ttl: o.ttl}
}

func (h lineHold) id() string { return h.token }
