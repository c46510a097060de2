package core

import (
	"context"
	"crypto/rand"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// A Mutex waits under Notify in a queue kept in Redis. A waiter that fails
// an attempt joins the lock's queue with a ticket key of its own, holding
// its token and TTL. A release hands the lock to the oldest live waiter:
// it sets the lock to that waiter's token and tells that waiter's Client
// the fencing token, on the Client's own channel, which each Client
// subscribes once per node. So a release wakes one waiter among all
// processes, nobody barges in, and the woken waiter holds the lock without
// another round trip once a majority of nodes granted it (see
// notify_grant.go). (An owner's waiter, WithOwner, gets the lock reserved a
// moment and takes it with an attempt.) A ticket expires with the lock it
// waits on, and the waiter retries then: a waiter that died leaves the
// queue by that time.

// Events on the lock key itself are not releases by this library (those
// reach the woken ticket) but a DEL from elsewhere or an expiry: a holder
// that died. The waiter that joined the queue at its head listens for them
// too, on the Client's reference-counted subscription to the lock key, so
// that they wake it; the others do not, so that waiting costs them no
// subscription, and the head, once it holds the lock, hands it on.

// ticket is one queued Lock call.
type ticket struct {
	key     string
	token   string // the lease's token in every attempt, and in a grant
	arrival int64  // the waiter's place in the queue (µs since the epoch), the same on every node
	wake    chan struct{}
	join    bool        // the next attempt joins the queue
	joined  bool        // an attempt may have put it in the queue
	sent    time.Time   // the start of the last attempt
	first   atomic.Bool // an attempt put it at the head of the queue
	grants  grants      // what the nodes' releases granted it
	stem    string      // its tokens are stem and a number, seq (see rotate)
	seq     int
	earlier []string // the tokens it gave up, the last few
	sharded bool     // counted on its sharded channel (notify_shard.go)
}

// newTicket registers a ticket in the queue of the Mutex called name,
// whose tokens start with stem (see rotate); it is signalled on wake, a
// fresh channel when nil.
func (n *notifier) newTicket(o *options, name, stem string, wake chan struct{}) *ticket {
	t := n.register(key(*o, name, ticketInfix+n.c.id+":"+rand.Text()), stem+"0", wake)
	t.stem = stem
	return t
}

// register makes key a ticket of this Client: what a release tells the
// Client of it signals wake (a fresh channel when nil). key must end in
// ":t:<client id>:<random>", where the scripts find the Client's channel.
func (n *notifier) register(key, token string, wake chan struct{}) *ticket {
	if wake == nil {
		wake = make(chan struct{}, 1)
	}
	t := &ticket{key: key, token: token, arrival: time.Now().UnixMicro(), wake: wake, grants: newGrants(len(n.c.nodes))}
	n.mu.Lock()
	n.tickets[t.key] = t
	n.mu.Unlock()
	return t
}

// rotate gives a queued waiter a fresh token after an undo of its attempt
// failed on some node: that undo may still land there, later, and delete
// whatever holds the old token then, a grant or the waiter's lease. Until
// its next attempt stores the new token in its ticket, it hears no grant;
// that attempt takes over a grant made to any token it gave up, and its
// leave passes one on: the scripts know them by their stem and a smaller
// number (see lib/take_over.lua), however many there were while a node
// was stalled.
func (t *ticket) rotate() {
	t.earlier = append(t.earlier, t.token)
	t.earlier = t.earlier[max(0, len(t.earlier)-4):]
	t.seq++
	t.token = t.stem + strconv.Itoa(t.seq)
	t.grants.rotate()
}

func (t *ticket) signal() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// ticketWatch waits for a ticket that another primitive (FairMutex,
// RWMutex) registered: the first wait subscribes the Client's channel and
// has the caller attempt again at once, so that no grant after its last
// attempt goes unheard.
type ticketWatch struct {
	n          *notifier
	t          *ticket
	o          *options
	subscribed bool
}

func (w *ticketWatch) wait(ctx context.Context, attempt int, holderTTL time.Duration) error {
	if !w.subscribed {
		w.subscribed = true
		w.n.subscribeTickets(ctx, w.o)
		if err := w.n.refusal(); err != nil {
			return err
		}
		if w.n.ticketsReady(w.o) {
			w.t.join = true
			return nil
		}
	}
	return w.n.waitTicket(ctx, w.o, w.t, attempt, holderTTL)
}

func (w *ticketWatch) stop() {}

func (n *notifier) dropTicket(t *ticket) {
	n.mu.Lock()
	delete(n.tickets, t.key)
	n.mu.Unlock()
	if t.sharded {
		n.shardLeave(t.key)
	}
}

// subscribeTickets subscribes, once per node and key prefix, the Client's
// own channel, on which releases tell it of its tickets (see
// lib/tell.lua). Until every node confirmed it, waiters do not queue.
func (n *notifier) subscribeTickets(ctx context.Context, o *options) {
	prefix := o.keyPrefix
	n.each(ctx, o, "subscribe", func(ctx context.Context, s *subscriber) error {
		l, _, err := s.listener(ctx, n)
		if err != nil {
			return err
		}
		s.mu.Lock()
		done := s.tickets[prefix]
		s.mu.Unlock()
		if done {
			return nil
		}
		if err := l.Subscribe(ctx, n.c.channel(prefix)); err != nil {
			return err
		}
		s.mu.Lock()
		if s.tickets == nil {
			s.tickets = map[string]bool{}
		}
		s.tickets[prefix] = true
		s.mu.Unlock()
		return nil
	})
	for _, s := range n.subs {
		s.mu.Lock()
		ok := s.tickets[prefix]
		s.mu.Unlock()
		if !ok {
			return
		}
	}
	n.ready.Store(prefix, true)
}

// ticketsReady reports whether every node delivers what releases tell this
// Client's tickets under o's key prefix.
func (n *notifier) ticketsReady(o *options) bool {
	_, ok := n.ready.Load(o.keyPrefix)
	return ok
}

// channel is the Client's own channel for tickets under the key prefix,
// named after its id as the scripts find it in a ticket key (see
// lib/tell.lua).
func (c *Client) channel(prefix string) string { return prefix + clientInfix + c.id }

// ownChannel reports whether channel is one of this Client's own
// channels, and the prefix its tickets' keys have.
func (n *notifier) ownChannel(channel string) (string, bool) {
	prefix, ok := strings.CutSuffix(channel, clientInfix+n.c.id)
	return prefix + "{", ok
}

// lockQueued is Lock under Notify: a line of one ticket.
func (m *Mutex) lockQueued(ctx context.Context, n *notifier) (*Lease, error) {
	t := n.newTicket(&m.opts, m.name, rand.Text(), nil)
	defer n.dropTicket(t)
	q := line{n: n, o: &m.opts,
		attempt: func(ctx context.Context, join bool) (*Lease, *ticket, string, time.Duration, error) {
			t.join = join
			t.joined = t.joined || join
			l, holderTTL, err := m.attempt(ctx, t)
			return l, t, m.keys.lock, holderTTL, err
		},
		quit:    func(err error) error { return m.leave(ctx, t, err) },
		granted: func(ctx context.Context) *Lease { return m.grantedLease(ctx, t) },
		heed:    t.grants.refused,
	}
	return q.wait(ctx)
}

// waitTicket waits for the ticket's wake-up. As a safety net against a
// lost event it retries at the holder's TTL anyway; a waiter that could not
// queue polls with backoff.
func (n *notifier) waitTicket(ctx context.Context, o *options, t *ticket, attempt int, holderTTL time.Duration) error {
	if t.join && !t.sharded { // queued: a release may tell it
		t.sharded = true
		n.shardJoin(t.key)
	}
	retry := o.backoff.Delay(attempt)
	if t.join {
		retry = safetyNet(o, attempt, holderTTL)
	}
	timer := time.NewTimer(retry)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-n.c.closing:
		return ErrClosed
	case <-timer.C:
	case <-t.wake:
		t.awaitGrants(ctx, n.c.quorum, o.fencing)
	}
	return nil
}

// leave takes a ticket that may be queued out of the queue on every node,
// handing on a grant or reservation made to it, and returns err.
func (m *Mutex) leave(ctx context.Context, t *ticket, err error) error {
	if t.joined {
		leaveQueue(ctx, m.c, &m.opts, m.keys, t, everyNode, false, true)
	}
	return err
}

// leaveBehind takes the ticket of a won Lock out of the queues of the
// nodes that did not grant it, in the background (the lock is held
// already): otherwise a later release there would grant (or reserve) the
// lock to a waiter that is gone, holding that node up. It keeps what the
// lease's token holds there (a grant that came late, or an attempt whose
// answer was lost): an extension may have counted it. The lease's release
// leaves there again, for good, after releasing (l.left): a grant that
// reached the ticket after that release, or that the release missed, is
// handed on then, and the ticket marked left.
func (m *Mutex) leaveBehind(ctx context.Context, l *Lease, t *ticket, missed func(int) bool) {
	m.c.inBackground(func() { leaveQueue(ctx, m.c, &m.opts, m.keys, t, missed, true, true) })
	l.left = func(ctx context.Context) { leaveQueue(ctx, m.c, &m.opts, m.keys, t, missed, false, true) }
}

// leaveQueue takes ticket t out of the queue of the lock keys k on the
// nodes where on(i), handing on a grant or reservation made to it
// meanwhile, unless keep: a waiter that won keeps a grant that reached it
// late, as part of its lease (and a MultiLock waiter that moves to another
// queue, for its next attempt). Where the ticket's token holds the lock,
// handing on hands on the lock: then keep it, or call this only where the
// waiter does not hold it. A waiter that leaves for good marks its ticket
// as left (see lib/left.lua): its attempts that land later are refused,
// and a leave that failed on a node is asked again (leaveAgain).
func leaveQueue(ctx context.Context, c *Client, o *options, k keyNames, t *ticket, on func(int) bool, keep, forGood bool) {
	// A grant made to a token the waiter gave up (see rotate) is passed on
	// too, and so is one to its token unless its lease holds it (keep, for
	// good) or its next attempt takes it (keep).
	token, spare := t.token, int64(0)
	switch {
	case o.owner != "", keep && !forGood:
		token = "" // an owner's waiter is only reserved the lock
	case keep:
		spare = 1
	}
	leave := func(ctx context.Context, on func(int) bool) []reply[int64] {
		return detached(ctx, c, o, func(ctx context.Context, i int, n *node) (int64, error) {
			if !on(i) {
				return 0, nil
			}
			left := time.Duration(0)
			if forGood {
				left = o.ttl
			}
			return n.d.MutexLeave(ctx, driver.MutexLeaveRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Ticket: t.key, Token: token, Reserve: o.reserve(), Idle: o.idle, Left: left, Stem: t.stem, Keep: spare})
		})
	}
	replies := leave(ctx, on)
	if forGood { // else the waiter may join this queue again with the ticket
		leaveAgain(ctx, c, o.ttl, replies, leave)
	}
}

// leaveAgain asks a waiter's leave (leave(ctx, on)) again, in the background,
// on the nodes where it failed, until it lands on each, the Client closes,
// or within has passed (by then what it hands on or takes back has
// lapsed). A leave that timed out may not have landed, and its entry would
// then stay in line until it lapses, where a release may grant or wake a
// waiter that is gone; a node that times out a few times in a row would
// keep such a grant for its whole TTL. A leave is idempotent, so one that
// did land is asked again to no effect. The retries outlive ctx, whose
// caller has usually given up.
func leaveAgain[T any](ctx context.Context, c *Client, within time.Duration, replies []reply[T], leave func(ctx context.Context, on func(int) bool) []reply[T]) {
	failed := func(i int) bool { return replies[i].err != nil }
	if !slices.ContainsFunc(replies, func(r reply[T]) bool { return r.err != nil }) {
		return
	}
	until, bg := time.Now().Add(within), context.WithoutCancel(ctx)
	c.inBackground(func() {
		for n := 0; ; n++ {
			replies = leave(bg, failed)
			if !slices.ContainsFunc(replies, func(r reply[T]) bool { return r.err != nil }) {
				return
			}
			pause := leaveBackoff.Delay(n)
			if time.Now().Add(pause).After(until) {
				return
			}
			select {
			case <-c.closing:
				return
			case <-time.After(pause):
			}
		}
	})
}

// leaveBackoff spaces the retries of a failed leave: a random pause below
// 50ms at first, as most failures are one lost packet, doubling up to
// below a second (two retries a second on average) while a node fails.
var leaveBackoff = Backoff{Base: 50 * time.Millisecond, Cap: time.Second, Multiplier: 2}

// inBackground runs f in the background unless the Client is closed;
// Close waits for it.
func (c *Client) inBackground(f func()) {
	if c.closed.Load() {
		return
	}
	c.background.Add(1)
	go func() {
		defer c.background.Done()
		f()
	}()
}
