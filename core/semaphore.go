package core

import (
	"context"
	"crypto/rand"
	"errors"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// Semaphore lets up to a number of permits be held at once. Every
// acquisition takes n permits atomically and returns one Lease covering
// them; each permit expires at the lease's TTL on the server's clock, so a
// holder that dies gives its permits back then, whatever the clients'
// clocks say. The lease's Extend and Unlock touch exactly its permits.
//
// The number of permits is the one given to Client.Semaphore until
// SetPermits stores one in Redis; from then on the stored number is in
// force for every client. A Semaphore is safe for concurrent use and cheap:
// make one per name as needed. WithOwner does not apply to it.
//
// Permits are numbered slots, and a node gives a slot to one lease at a
// time. With a quorum, an acquisition follows Mutex's rules: it asks every
// node at once and holds when a majority gave it the same n slots with
// validity left (TTL − elapsed − drift), and is undone on every other node,
// or on all of them when it fails. Two majorities share a node, so two
// valid leases never hold the same slot: at most the number of permits are
// held at once. (Counting permits per node would not do: with 2 permits,
// three leases could each win a different pair of three nodes.) Each
// attempt has every node look for free slots from the same random one, so
// that concurrent attempts take different slots rather than split the
// nodes' votes, and so that a slot free on a majority is found even where
// leases hold theirs on different majorities.
//
// Under Notify, waiters are served first come, first served: each waits
// in a line kept in Redis, as a FairMutex waiter does (its entry lapses
// unless its attempts refresh it), and takes permits only when it is
// first in line. A release, or a waiter leaving the line, wakes the waiter
// first in line through its ticket (see lib/tell.lua); a waiter that takes
// permits and leaves enough for the next one wakes that one. A waiter also
// retries when enough permits expire, which nothing announces, and at
// least every quarter TTL. Under Poll, and with TryAcquire, an attempt
// does not wait in line and takes permits only when no one waits in line.
// With a quorum, a waiter's place is the time its Acquire began, the same
// on every node (see FairMutex for what that means across clocks). An
// operation costs the server time in proportion to n and the permits held.
//
// Token returns the acquisition's fencing token, from a per-name counter:
// on one node it increases with every acquisition; with a quorum (and
// WithFencing, the default) an acquisition that starts after another one
// returned draws a larger token, while concurrent ones may draw the same.
type Semaphore struct {
	c       *Client
	name    string
	names   []string // name alone, as a lease takes it
	permits int
	opts    options
	keys    semaphoreKeys
}

// semaphoreKeys are a semaphore's keys, all under its {name} hash tag.
type semaphoreKeys struct {
	permits string // sorted set of held slots, scored by expiry
	holders string // hash: slot → token, and t:<token> → its slots
	size    string // the number of permits stored by SetPermits
	fence   string // fencing counter (see WithIdleExpiry)
	queue   string // sorted set of the waiters' tickets, by place
	tickets string // the prefix of the waiters' ticket keys
}

func newSemaphoreKeys(o options, name string) semaphoreKeys {
	k := keyOf(o, name)
	return semaphoreKeys{permits: k(":semaphore"), holders: k(":semaphore:holders"),
		size: k(":semaphore:size"), fence: k(":semaphore:fence"), queue: k(":semaphore:q"),
		tickets: k(":semaphore" + ticketInfix)}
}

// mark is the key that marks the attempt of token as released or undone.
func (k semaphoreKeys) mark(token string) string { return k.tickets + "a:" + token }

// Semaphore returns the semaphore called name with permits permits (until
// SetPermits stores another number). Options given here override the
// Client's. Bad input is reported by its methods.
func (c *Client) Semaphore(name string, permits int, opts ...Option) *Semaphore {
	o := c.options("Semaphore", opts)
	return &Semaphore{c: c, name: name, names: []string{name}, permits: permits, opts: o, keys: newSemaphoreKeys(o, name)}
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// TryAcquire makes one attempt to take n permits at once. It returns
// ErrNotAcquired when fewer than n are free or waiters wait in line (they
// come first), ErrNoQuorum when too few nodes answered, and ErrInvalid
// when n is not positive or exceeds the number of permits or
// MaxSemaphoreAcquire.
func (s *Semaphore) TryAcquire(ctx context.Context, n int) (*Lease, error) {
	if err := s.check(ctx, n); err != nil {
		return nil, err
	}
	l, _, err := s.attempt(ctx, n, nil)
	return l, err
}

// Acquire waits until it takes n permits at once, ctx ends (its error is
// returned), or WithMaxAttempts attempts failed (ErrNotAcquired). It holds
// no permit while it waits. It returns at once with ErrNoQuorum when a
// majority of nodes cannot be reached, and with ErrInvalid when n is not
// positive or exceeds the number of permits, also when SetPermits lowers
// the number below n while it waits.
func (s *Semaphore) Acquire(ctx context.Context, n int) (*Lease, error) {
	if err := s.check(ctx, n); err != nil {
		return nil, err
	}
	w := &semaphoreWaiter{}
	if len(s.c.nodes) > 1 {
		w.place = time.Now().UnixMicro()
	}
	w.wait, _ = lineTimes(&s.opts)
	out := func(token string) hold { return semaphoreHold{keys: s.keys, ticket: s.keys.tickets + token} }
	return waitInLine(ctx, s.c, &s.opts, s.names, s.keys.tickets, out,
		func(ctx context.Context, token string, g *grants) (*Lease, time.Duration, error) {
			w.ticket = s.keys.tickets + token
			w.join, w.grants = g != nil, g // under Poll no one would wake it
			return s.attempt(ctx, n, w)
		})
}

// semaphoreWaiter is an Acquire's place in line.
type semaphoreWaiter struct {
	ticket string
	join   bool    // wait in line: under Notify
	grants *grants // its attempts' secrets, which key the MAC of its wake-ups
	place  int64   // with a quorum, the time Acquire began; else the server gives it
	wait   time.Duration
}

// SetPermits stores the number of permits in Redis, for every client, and
// wakes the waiters. Permits held beyond a lowered number are not revoked:
// new acquisitions wait until enough of them are released or expire. It
// returns ErrInvalid for a number below 1 or above MaxSemaphorePermits
// and ErrNoQuorum when a majority did not store it.
func (s *Semaphore) SetPermits(ctx context.Context, permits int) error {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return err
	}
	if permits <= 0 || int64(permits) > MaxSemaphorePermits {
		return invalid("SetPermits(%d) on semaphore %q: the number of permits must be from 1 to MaxSemaphorePermits", permits, s.name)
	}
	replies := fanout(ctx, s.c, &s.opts, func(ctx context.Context, _ int, nd *node) (int64, error) {
		return nd.d.SemaphoreSetPermits(ctx, s.keys.size, s.keys.queue, int64(permits), s.opts.idle)
	})
	return noQuorum(ctx, s.c, replies)
}

// Available returns how many permits are free: with a quorum, the largest
// number that a majority of nodes have free. (A lease must get the same
// slots on a majority, so while leases hold theirs on different
// majorities, fewer may be taken at once.) It returns ErrNoQuorum when
// too few nodes answered.
func (s *Semaphore) Available(ctx context.Context) (int, error) {
	if err := s.check(ctx, 1); err != nil {
		return 0, err
	}
	replies := fanout(ctx, s.c, &s.opts, func(ctx context.Context, _ int, nd *node) (int64, error) {
		return nd.d.SemaphoreAvailable(ctx, s.keys.permits, s.keys.holders, s.keys.size, int64(s.permits))
	})
	if err := noQuorum(ctx, s.c, replies); err != nil {
		return 0, err
	}
	var free []int64
	for _, r := range replies {
		if r.err == nil {
			free = append(free, r.v)
		}
	}
	slices.Sort(free)
	return int(free[len(free)-s.c.quorum]), nil
}

// check reports a closed client, a nil context, bad options, a bad number
// of permits, or a bad n, before anything is written.
func (s *Semaphore) check(ctx context.Context, n int) error {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return err
	}
	switch {
	case s.permits <= 0 || int64(s.permits) > MaxSemaphorePermits:
		return invalid("semaphore %q has %d permits; give it 1 to MaxSemaphorePermits", s.name, s.permits)
	case n <= 0 || n > MaxSemaphoreAcquire:
		return invalid("cannot take %d permits of semaphore %q; take 1 to MaxSemaphoreAcquire (%d)", n, s.name, MaxSemaphoreAcquire)
	}
	return nil
}

// attempt runs one round (see round): every node at once, each giving n
// slots or none. On failure it returns the time until enough permits
// expire as a hint. A waiter in Acquire passes its place in line; nil does
// not join.
func (s *Semaphore) attempt(ctx context.Context, n int, w *semaphoreWaiter) (*Lease, time.Duration, error) {
	c, o, k := s.c, &s.opts, s.keys
	ticket, join, place, wait := k.tickets, int64(0), int64(0), time.Duration(0)
	secrets := make([]string, len(c.nodes)) // keying the MAC of the waiter's wake-ups, by node
	if w != nil {
		ticket, place, wait = w.ticket, w.place, w.wait
		if w.join {
			join = 1
			w.grants.expect()
			for i := range secrets {
				secrets[i] = w.grants.secret(i)
			}
		}
	}
	// The lease's release, and the undo, leave the waiter in line: its
	// taking the slots took it out.
	token := rand.Text()
	h := semaphoreHold{keys: k, token: token, n: int64(n), ticket: k.mark(token), ttl: o.ttl}
	// Every node scans for free slots from the same random one: see
	// semaphore_acquire.lua.
	seed := mrand.Int64N(digestBound)
	var t permitTally
	p := round[permitReply]{c: c, o: o, names: s.names,
		ask: func(ctx context.Context, i int, nd *node) (permitReply, error) {
			return nd.d.SemaphoreAcquire(ctx, driver.SemaphoreAcquireRequest{Permits: k.permits, Holders: k.holders, Size: k.size, Fence: k.fence, Queue: k.queue, Ticket: ticket, Mark: h.ticket, Token: h.token, N: int64(n), TTL: o.ttl, DefaultSize: int64(s.permits), Seed: seed, Join: join, Place: place, Wait: wait, Idle: o.idle, Secret: secrets[i]})
		},
		granted: func(r permitReply) bool { return r.Status == 1 },
		agree:   func(r permitReply) int64 { return r.Slots },
		count: func(replies []reply[permitReply]) outcome[permitReply] {
			t = tallyPermits(replies)
			// A node that gave other slots than the majority's is not
			// part of the lease.
			wins := func(r reply[permitReply]) bool { return r.err == nil && r.v.Status == 1 && r.v.Slots == t.slots }
			return outcome[permitReply]{wins: wins, fence: t.fence, hint: t.retry}
		},
		hold:    func(outcome[permitReply]) hold { h.slots = t.slots; return h },
		mayHold: func(r reply[permitReply]) bool { return r.err != nil || r.v.Status == 1 },
		undo:    func(ctx context.Context, nd *node, _ reply[permitReply]) (bool, error) { return h.release(ctx, nd) },
		durable: func(ctx context.Context, _ []reply[permitReply], wins func(int) bool, fence int64) bool {
			return len(c.nodes) == 1 || s.makeFenceDurable(ctx, wins, fence)
		},
		won: func(ctx context.Context, l *Lease, replies []reply[permitReply], wins func(int) bool) {
			// Give back the other slots a minority gave, or may have
			// given where the reply was lost.
			l.release(ctx, func(i int) bool {
				r := replies[i]
				return !wins(i) && !stillOut(r) && (r.err != nil || r.v.Status == 1)
			})
			if w != nil && w.join && len(c.nodes) > 1 {
				// Where it did not win, it is still in line, and would
				// hold that line up until its entry lapsed.
				out := semaphoreHold{keys: k, ticket: w.ticket}
				c.inBackground(func() { releaseOn(ctx, c, o, out, func(i int) bool { return !wins(i) }) })
			}
		},
	}
	r := p.play(ctx)
	switch {
	case !errors.Is(r.err, ErrNotAcquired):
		return r.lease, 0, r.err
	case t.tooMany >= c.quorum:
		return nil, 0, invalid("cannot take %d permits of semaphore %q, which has %d", n, s.name, t.size)
	case t.granted > 0:
		// Nodes that gave it permits took it out of line, so none of
		// them will wake it: it tries again after its backoff rather
		// than at the hint, which puts it back in line.
		return nil, 0, ErrNotAcquired
	}
	return nil, r.hint, ErrNotAcquired
}

// permitReply is one node's answer to a Semaphore attempt.
type permitReply = driver.SemaphoreAcquireReply

// permitTally sums up one attempt's replies.
type permitTally struct {
	slots   int64         // the digest of the slots most nodes gave
	granted int           // nodes that gave those slots
	fence   int64         // the highest fencing counter among them
	tooMany int           // nodes that have fewer permits than asked for
	retry   time.Duration // the shortest wait for enough permits to expire; -1 unknown
	size    int64         // the number of permits a node refusing too many reported
}

func tallyPermits(replies []reply[permitReply]) permitTally {
	t := permitTally{retry: -1}
	given := map[int64]int{} // nodes by the digest of the slots they gave
	for _, r := range replies {
		if r.err == nil && r.v.Status == 1 {
			given[r.v.Slots]++
			if given[r.v.Slots] > t.granted {
				t.slots, t.granted = r.v.Slots, given[r.v.Slots]
			}
		}
	}
	for _, r := range replies {
		switch {
		case r.err != nil:
		case r.v.Status == 1:
			if r.v.Slots == t.slots {
				t.fence = max(t.fence, r.v.Fence)
			}
		case r.v.Status < 0:
			t.tooMany++
			t.size = r.v.Size
		case t.retry < 0 || r.v.Retry < t.retry:
			t.retry = r.v.Retry
		}
	}
	return t
}

// makeFenceDurable raises the fencing counter to the chosen token on the
// nodes that granted (won); it succeeds when a majority did. Any later
// acquisition is granted by a majority, which overlaps this one, so it
// draws a larger token.
func (s *Semaphore) makeFenceDurable(ctx context.Context, won func(int) bool, fence int64) bool {
	replies := fanout(ctx, s.c, &s.opts, func(ctx context.Context, i int, nd *node) (bool, error) {
		if !won(i) {
			return false, nil
		}
		v, err := nd.d.SemaphoreFenceRaise(ctx, s.keys.fence, fence, s.opts.idle)
		return v == 1, err
	})
	return held(replies) >= s.c.quorum
}

// semaphoreHold is a Semaphore lease's hold: n slots given to its token,
// the slots whose digest a majority gave (a node may have given the token
// others). Its release also takes ticket out of line: that of a waiter
// that gives up (holding no slots, no token); for a lease, ticket is its
// attempt's mark, which the release sets where it found nothing, as the
// attempt may still land there (see semaphore_release.lua).
type semaphoreHold struct {
	keys   semaphoreKeys
	token  string
	n      int64
	slots  int64
	ticket string
	ttl    time.Duration // how long a lease's mark stays
}

func (h semaphoreHold) id() string {
	return strconv.FormatInt(h.n, 10) + "-" + h.token + "-" + strconv.FormatInt(h.slots, 10) + "-" + strconv.FormatInt(h.ttl.Milliseconds(), 10)
}

func (h semaphoreHold) extend(ctx context.Context, nd *node, ttl time.Duration) (bool, error) {
	v, err := nd.d.SemaphoreExtend(ctx, driver.SemaphoreExtendRequest{Permits: h.keys.permits, Holders: h.keys.holders, Mark: h.ticket, Token: h.token, N: h.n, Slots: h.slots, TTL: ttl})
	return v == 1, err
}

func (h semaphoreHold) release(ctx context.Context, nd *node) (bool, error) {
	v, err := nd.d.SemaphoreRelease(ctx, driver.SemaphoreReleaseRequest{Permits: h.keys.permits, Holders: h.keys.holders, Queue: h.keys.queue, Ticket: h.ticket, Token: h.token, N: h.n, Left: h.ttl})
	return v == 1, err
}
