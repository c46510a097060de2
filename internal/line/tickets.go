package line

import (
	"context"
	"crypto/rand"
	"strconv"
	"strings"
	"time"
)

// A Mutex waits under Notify in a queue kept in Redis. A waiter that fails
// an attempt joins the lock's queue with a ticket key of its own, holding
// its token and TTL. A release hands the lock to the oldest live waiter:
// it sets the lock to that waiter's token and tells that waiter's Client
// the fencing token, on the Client's own channel, which each Client
// subscribes once per node. So a release wakes one waiter among all
// processes, nobody barges in, and the woken waiter holds the lock without
// another round trip once a majority of nodes granted it (see
// grants.go). (An owner's waiter, WithOwner, gets the lock reserved a
// moment and takes it with an attempt.) A ticket expires with the lock it
// waits on, and the waiter retries then: a waiter that died leaves the
// queue by that time.

// Events on the lock key itself are not releases by this library (those
// reach the woken ticket) but a DEL from elsewhere or an expiry: a holder
// that died. No queued waiter listens for them, so that waiting costs no
// subscription: each retries at the holder's TTL.

// Ticket is one waiter that a release may tell of a grant or a wake-up:
// a queued Lock call, or a waiter in a line kept in Redis (FairMutex,
// RWMutex writers, Semaphore).
type Ticket struct {
	Key     string
	Token   string        // the lease's token in every attempt, and in a grant
	Arrival int64         // the waiter's place in the queue (µs since the epoch), the same on every node
	Wake    chan struct{} // nil until Enlist, as nothing signals it before
	Join    bool          // the next attempt joins the queue
	Joined  bool          // an attempt may have put it in the queue
	Sent    time.Time     // the start of the last attempt
	Grants  Grants        // what the nodes' releases granted it
	Stem    string        // its tokens are Stem and a number, seq (see Rotate)
	Earlier []string      // the tokens it gave up, the last few
	seq     int
	sharded bool // counted on its sharded channel (shards.go)
	listed  bool // registered (see Enlist); read and written by its waiter only
}

// NewTicket registers a ticket in the queue of a Mutex whose keys start
// with base ("<prefix>{name}"), whose tokens start with stem (see
// Rotate); it is signalled on wake, a fresh channel when nil.
func (n *Notifier) NewTicket(base, stem string, wake chan struct{}) *Ticket {
	t := n.UnlistedTicket(base, stem, wake)
	n.Enlist(t)
	return t
}

// UnlistedTicket is NewTicket's ticket, which its waiter registers with
// Enlist before the first attempt that queues it: a release tells only a
// ticket that an attempt queued, so a Lock that takes the name at its
// first attempt never registers one.
func (n *Notifier) UnlistedTicket(base, stem string, wake chan struct{}) *Ticket {
	t := n.ticket(RandomKey(base, TicketInfix, n.id, ":"), stem+"0", wake)
	t.Stem = stem
	return t
}

// RandomKey is parts joined and followed by a rand.Text, in one
// allocation: tickets and an attempt's marks are made per call.
func RandomKey(parts ...string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567" // rand.Text's
	var src [26]byte
	rand.Read(src[:])
	for i := range src {
		src[i] = alphabet[src[i]%32]
	}
	size := len(src)
	for _, p := range parts {
		size += len(p)
	}
	var b strings.Builder
	b.Grow(size)
	for _, p := range parts {
		b.WriteString(p)
	}
	b.Write(src[:])
	return b.String()
}

// Register makes key a ticket of this Client: what a release tells the
// Client of it signals wake (a fresh channel when nil). key must end in
// TicketInfix, the Client's id, ':' and a random part,
// where the scripts find the Client's channel.
func (n *Notifier) Register(key, token string, wake chan struct{}) *Ticket {
	t := n.ticket(key, token, wake)
	n.Enlist(t)
	return t
}

func (n *Notifier) ticket(key, token string, wake chan struct{}) *Ticket {
	return &Ticket{Key: key, Token: token, Arrival: time.Now().UnixMicro(), Wake: wake, Grants: newGrants(len(n.g.Nodes), n.standalone)}
}

// Enlist registers t, once: from then on what a release tells the Client
// of it reaches it (see Register).
func (n *Notifier) Enlist(t *Ticket) {
	if t.listed {
		return
	}
	t.listed = true
	if t.Wake == nil {
		t.Wake = make(chan struct{}, 1)
	}
	n.mu.Lock()
	n.tickets[t.Key] = t
	n.follow()
	n.mu.Unlock()
}

// Rotate gives a queued waiter a fresh token after an undo of its attempt
// failed on some node: that undo may still land there, later, and delete
// whatever holds the old token then, a grant or the waiter's lease. Until
// its next attempt stores the new token in its ticket, it hears no grant;
// that attempt takes over a grant made to any token it gave up, and its
// leave passes one on: the scripts know them by their stem and a smaller
// number (see lib/take_over.lua), however many there were while a node
// was stalled.
func (t *Ticket) Rotate() {
	t.Earlier = append(t.Earlier, t.Token)
	t.Earlier = t.Earlier[max(0, len(t.Earlier)-4):]
	t.seq++
	t.Token = t.Stem + strconv.Itoa(t.seq)
	t.Grants.rotate()
}

func (t *Ticket) signal() {
	select {
	case t.Wake <- struct{}{}:
	default:
	}
}

// ticketWatch waits for a ticket that another primitive (FairMutex,
// RWMutex, Semaphore) registered: until every node subscribed the
// Client's channel, a wait subscribes it, and once it is, has the caller
// attempt again at once, joining the line, so that no grant after its
// last attempt goes unheard.
type ticketWatch struct {
	n *Notifier
	t *Ticket
	o *Options
}

func (w *ticketWatch) wait(ctx context.Context, attempt int, holderTTL time.Duration) error {
	if !w.t.Join {
		w.n.subscribeTickets(ctx, w.o) // until every node subscribed: one that failed may answer now
		if w.n.ticketsReady(w.o) {
			w.t.Join = true
			return nil
		}
	}
	return w.n.waitTicket(ctx, w.o, w.t, attempt, holderTTL)
}

func (w *ticketWatch) stop() {}

func (n *Notifier) DropTicket(t *Ticket) {
	if !t.listed {
		return // never queued: not sharded either
	}
	n.mu.Lock()
	delete(n.tickets, t.Key)
	n.mu.Unlock()
	if t.sharded {
		n.shardLeave(t.Key)
	}
}

// subscribeTickets subscribes, once per node and key prefix, the Client's
// own channel, on which releases tell it of its tickets (see
// lib/tell.lua). Until every node confirmed it, waiters do not queue. It
// returns once a majority answered; a node that confirms later, the last
// one, makes the prefix ready then.
func (n *Notifier) subscribeTickets(ctx context.Context, o *Options) {
	prefix := o.Prefix
	n.each(ctx, o, "subscribe", func(ctx context.Context, s *subscriber) error {
		l, _, err := s.listener(ctx, n)
		if err != nil {
			return err
		}
		s.mu.Lock()
		done := s.tickets[prefix]
		s.mu.Unlock()
		if !done {
			if err := l.Subscribe(ctx, n.channel(prefix)); err != nil {
				return err
			}
			s.mu.Lock()
			if s.tickets == nil {
				s.tickets = map[string]bool{}
			}
			s.tickets[prefix] = true
			s.mu.Unlock()
		}
		n.readyIfAll(prefix)
		return nil
	})
}

// readyIfAll makes prefix ready once every node subscribed its channel.
func (n *Notifier) readyIfAll(prefix string) {
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
func (n *Notifier) ticketsReady(o *Options) bool {
	_, ok := n.ready.Load(o.Prefix)
	return ok
}

// TicketsReady is ticketsReady, for a waiter that joins a line only once
// a release there would not take it for dead (a Semaphore's).
func (n *Notifier) TicketsReady(o *Options) bool { return n.ticketsReady(o) }

// channel is the Client's own channel for tickets under the key prefix,
// named after its id as the scripts find it in a ticket key (see
// lib/tell.lua).
func (n *Notifier) channel(prefix string) string { return prefix + ClientInfix + n.id }

// ownChannel reports whether channel is one of this Client's own
// channels, and the prefix its tickets' keys have.
func (n *Notifier) ownChannel(channel string) (string, bool) {
	prefix, ok := strings.CutSuffix(channel, ClientInfix+n.id)
	return prefix + "{", ok
}

// waitTicket waits for the ticket's wake-up. As a safety net against a
// lost event it retries at the holder's TTL anyway; a waiter that could not
// queue polls with backoff.
func (n *Notifier) waitTicket(ctx context.Context, o *Options, t *Ticket, attempt int, holderTTL time.Duration) error {
	if t.Join && !t.sharded { // queued: a release may tell it
		t.sharded = true
		n.shardJoin(t.Key)
	}
	retry := o.Backoff.Delay(attempt)
	if t.Join {
		retry = safetyNet(o, attempt, holderTTL)
	}
	timer := time.NewTimer(retry)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-n.g.Closing():
		return ErrClosed
	case <-timer.C:
	case <-t.Wake:
		t.awaitGrants(ctx, n.g.Quorum, o.Fencing)
	}
	return nil
}
