package core

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

// Semaphore lets up to a number of permits be held at once. Every
// acquisition takes n permits atomically and returns one Lease covering
// them; each permit expires at the lease's TTL on the server's clock, so a
// holder that dies gives its permits back then, whatever the clients'
// clocks say. The lease's Extend and Unlock touch exactly its permits.
//
// The number of permits is the one given to Client.Semaphore until
// SetPermits, TrySetPermits or AddPermits stores one in Redis; from then
// on the stored number is in force for every client. A Semaphore is safe
// for concurrent use and cheap: make one per name as needed. WithOwner
// does not apply to it.
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
// first in line through its ticket; a waiter that takes
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
	names   leaseNames // name alone, as a lease takes it
	permits int
	opts    options
	keys    semaphoreKeys
}

// semaphoreKeys are a semaphore's keys, all under its {name} hash tag.
type semaphoreKeys struct {
	permits string // sorted set of held slots, scored by expiry
	holders string // hash: slot → token, and t:<token> → its slots
	size    string // the number of permits stored by SetPermits, TrySetPermits or AddPermits
	fence   string // fencing counter (see WithIdleExpiry)
	queue   string // sorted set of the waiters' tickets (their ids), by place
	calls   string // the prefix of the marks of AddPermits and TrySetPermits calls
	// The line's tickets (see ticketIn in scripts/lua/lib/tickets.lua);
	// the attempts' marks (keys) start with ids too.
	ticketKeys
}

func newSemaphoreKeys(o options, name string) semaphoreKeys {
	k := keyOf(o, name)
	return semaphoreKeys{permits: k(":semaphore"), holders: k(":semaphore:holders"),
		size: k(":semaphore:size"), fence: k(":semaphore:fence"), queue: k(":semaphore:q"),
		calls: k(":semaphore:call:"), ticketKeys: newTicketKeys(k, ":semaphore")}
}

// newCall is a fresh key to mark a call of AddPermits or TrySetPermits
// where it wrote, so that a copy of its request writes nothing more.
func (k semaphoreKeys) newCall() string { return line.RandomKey(k.calls) }

// mark is the key that marks the attempt of token as released or undone.
func (k semaphoreKeys) mark(token string) string { return k.ids + "a:" + token }

// leaving is the hold of waiter w when it leaves the line: its release
// takes ticket out and marks it as left for ttl, so that an attempt of
// w's that lands later does not queue it again; where w never asked to
// join, it asks nothing. It has no token, so no attempt's mark is read or
// written: the mark of "" stands for one, a key of the name.
func (k semaphoreKeys) leaving(w *semaphoreWaiter, ticket string, ttl time.Duration) semaphoreHold {
	return semaphoreHold{keys: k, ticket: ticket, mark: k.mark(""), waiter: w, ttl: ttl}
}

// Semaphore returns the semaphore called name with permits permits (until
// a number is stored: see TrySetPermits). Options given here override the
// Client's. Bad input is reported by its methods.
func (c *Client) Semaphore(name string, permits int, opts ...Option) *Semaphore {
	o := c.options("Semaphore", opts)
	return &Semaphore{c: c, name: name, names: newLeaseNames(o, name), permits: permits, opts: o, keys: newSemaphoreKeys(o, name)}
}

// Name returns the semaphore's name.
func (s *Semaphore) Name() string { return s.name }

// TryAcquire makes one attempt to take n permits at once. It returns
// ErrNotAcquired when fewer than n are free or waiters wait in line (they
// come first), ErrInvalid when n is not positive or exceeds the number of
// permits or MaxSemaphoreAcquire, and ErrNoQuorum when too few nodes
// answered (ErrUnavailable or ErrReplicasBehind when they could not serve
// it yet).
func (s *Semaphore) TryAcquire(ctx context.Context, n int) (*Lease, error) {
	if err := s.check(ctx, n); err != nil {
		return nil, err
	}
	a := s.opts.acquiring(ctx, s.name, false)
	a.attempt()
	l, _, err := s.attempt(ctx, n, nil)
	return a.done(l, err)
}

// Acquire waits until it takes n permits at once, ctx ends (its error is
// returned), or WithMaxAttempts attempts failed (ErrNotAcquired). It holds
// no permit while it waits. It waits out nodes that fail (ErrNoQuorum,
// ErrUnavailable, ErrReplicasBehind): when ctx ends first, ctx's error is
// returned joined with the last of them. It returns ErrInvalid when n is
// not positive or exceeds the number of permits, also when SetPermits or
// AddPermits lowers the number below n while it waits.
func (s *Semaphore) Acquire(ctx context.Context, n int) (*Lease, error) {
	if err := s.check(ctx, n); err != nil {
		return nil, err
	}
	w := &semaphoreWaiter{}
	if len(s.c.q.Nodes) > 1 {
		w.place = time.Now().UnixMicro()
	}
	w.wait, _ = lineTimes(&s.opts)
	out := func(token string) hold { return s.keys.leaving(w, s.keys.ids+token, s.opts.ttl) }
	a := s.opts.acquiring(ctx, s.name, true)
	return a.done(waitInLine(ctx, s.c, &s.opts, s.names, s.keys.ids, out,
		func(ctx context.Context, token string, g *line.Grants, heard bool) (*Lease, time.Duration, error) {
			w.ticket = s.keys.ids + token
			// Under Poll no one would wake it; and until the Client hears
			// its tickets, a release would pass it over as dead.
			w.join, w.grants = heard, g
			a.attempt()
			return s.attempt(ctx, n, w)
		}))
}

// semaphoreWaiter is an Acquire's place in line.
type semaphoreWaiter struct {
	ticket string
	join   bool         // wait in line: under Notify, once the Client hears its tickets
	grants *line.Grants // its attempts' secrets, which key the MAC of its wake-ups
	place  int64        // with a quorum, the time Acquire began; else the server gives it
	wait   time.Duration
	// joins counts the attempts' requests that asked to join the line and
	// may have (all but those refused for asking too many permits, which
	// write nothing): while none may have, there is no line to leave.
	joins atomic.Int64
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
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (int64, error) {
		return nd.Driver.SemaphoreSetPermits(ctx, s.keys.size, s.keys.queue, s.keys.tickets, int64(permits), s.opts.idle)
	})
	return quorum.NoQuorum(ctx, s.c.q, replies)
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
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (int64, error) {
		return nd.Driver.SemaphoreAvailable(ctx, s.keys.permits, s.keys.holders, s.keys.size, int64(s.permits))
	})
	if err := quorum.NoQuorum(ctx, s.c.q, replies); err != nil {
		return 0, err
	}
	answered := slices.DeleteFunc(replies, func(r quorum.Reply[int64]) bool { return r.Err != nil })
	return int(quorum.MajorityHas(s.c.q.Quorum, answered, func(r quorum.Reply[int64]) int64 { return r.V })), nil
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

// attempt runs one round (see quorum.Round): every node at once, each giving n
// slots or none; a negative n drains: each node gives every free slot, at
// most -n, and the lease holds those a majority gave. On failure it
// returns the time until enough permits expire as a hint. A waiter in
// Acquire passes its place in line; nil does not join.
func (s *Semaphore) attempt(ctx context.Context, n int, w *semaphoreWaiter) (*Lease, time.Duration, error) {
	c, o, k := s.c, &s.opts, s.keys
	ticket, join, place, wait := "", int64(0), int64(0), time.Duration(0)
	secrets := make([]string, len(c.q.Nodes)) // keying the MAC of the waiter's wake-ups, by node
	if w != nil {
		ticket, place, wait = w.ticket, w.place, w.wait
		if w.join {
			join = 1
			w.grants.Expect()
			secrets = w.grants.Secrets()
		}
	}
	// The lease's release, and the undo, leave the waiter in line: its
	// taking the slots took it out.
	token := rand.Text() + o.metaTag()
	h := semaphoreHold{keys: k, token: token, n: int64(n), mark: k.mark(token), ttl: o.ttl, byID: new(atomic.Bool)}
	// What a node gave is given back whole, however many a drain took there.
	undo := h
	if n < 0 {
		undo.n = maxPermitsInID
	}
	// Every node scans for free slots from the same random one: see
	// semaphore_acquire.lua.
	seed := mrand.Int64N(digestBound)
	var t permitTally
	p := quorum.Round[permitReply]{
		Ask: func(ctx context.Context, i int, nd *quorum.Node) (permitReply, error) {
			if join == 1 {
				w.joins.Add(1)
			}
			r, err := nd.Driver.SemaphoreAcquire(ctx, driver.SemaphoreAcquireRequest{Permits: k.permits, Holders: k.holders, Size: k.size, Fence: k.fence, Queue: k.queue, Tickets: k.tickets, Mark: h.mark, Token: h.token, N: int64(n), TTL: o.ttl, DefaultSize: int64(s.permits), Seed: seed, Join: join, Place: place, Wait: wait, Idle: o.idle, Secret: secrets[i], Ticket: ticket})
			if join == 1 && err == nil && r.Status < 0 {
				w.joins.Add(-1)
			}
			return r, err
		},
		Granted: func(r permitReply) bool { return r.Status > 0 },
		Agree:   func(r permitReply) int64 { return r.Slots },
		Tally: func(replies []quorum.Reply[permitReply]) quorum.Outcome[permitReply] {
			t = tallyPermits(replies)
			// A node that gave other slots than the majority's is not
			// part of the lease.
			wins := func(r quorum.Reply[permitReply]) bool { return r.Err == nil && r.V.Status > 0 && r.V.Slots == t.slots }
			return quorum.Outcome[permitReply]{Wins: wins, Fence: t.fence, Hint: t.retry}
		},
		MayHold: func(r quorum.Reply[permitReply]) bool { return r.Err != nil || r.V.Status > 0 },
		Undo: func(ctx context.Context, nd *quorum.Node, _ quorum.Reply[permitReply]) (bool, error) {
			return undo.release(ctx, nd)
		},
		Durable: func(ctx context.Context, _ []quorum.Reply[permitReply], wins func(int) bool, fence int64) bool {
			return len(c.q.Nodes) == 1 || s.makeFenceDurable(ctx, wins, fence)
		},
	}
	holding := func(quorum.Outcome[permitReply]) hold { h.slots, h.n = t.slots, t.taken; return h }
	l, r := play(ctx, c, o, s.names, p, holding, func(ctx context.Context, l *Lease, replies []quorum.Reply[permitReply], wins func(int) bool) {
		// Give back the other slots a minority gave, or may have
		// given where the reply was lost.
		releaseOn(ctx, c, o, undo, func(i int) bool {
			r := replies[i]
			return !wins(i) && !quorum.StillOut(r) && (r.Err != nil || r.V.Status > 0)
		})
		if join == 1 && len(c.q.Nodes) > 1 {
			// Where it did not win, it is still in line, and would
			// hold that line up until its entry lapsed: the leave is
			// asked again until it lands, as a give-up's is.
			out := k.leaving(w, ticket, o.ttl)
			c.q.InBackground(func() {
				quorum.Retry(ctx, c.q, o.ttl, releaseOn(ctx, c, o, out, func(i int) bool { return !wins(i) }), func(ctx context.Context, on func(int) bool) []quorum.Reply[bool] {
					return releaseOn(ctx, c, o, out, on)
				})
			})
		}
	})
	switch {
	case !errors.Is(r.Err, ErrNotAcquired):
		return l, 0, r.Err
	case t.tooMany >= c.q.Quorum:
		return nil, 0, invalid("cannot take %d permits of semaphore %q, which has %d", n, s.name, t.size)
	case t.granted > 0:
		// Nodes that gave it permits took it out of line, so none of
		// them will wake it: it tries again after its backoff rather
		// than at the hint, which puts it back in line.
		return nil, 0, ErrNotAcquired
	}
	return nil, r.Hint, ErrNotAcquired
}

// permitReply is one node's answer to a Semaphore attempt.
type permitReply = driver.SemaphoreAcquireReply

// permitTally sums up one attempt's replies.
type permitTally struct {
	slots   int64         // the digest of the slots most nodes gave
	granted int           // nodes that gave those slots
	taken   int64         // how many slots those are
	fence   int64         // the highest fencing counter among them
	tooMany int           // nodes that have fewer permits than asked for
	retry   time.Duration // the shortest wait for enough permits to expire; -1 unknown
	size    int64         // the number of permits a node refusing too many reported
}

func tallyPermits(replies []quorum.Reply[permitReply]) permitTally {
	t := permitTally{retry: -1}
	given := map[int64]int{} // nodes by the digest of the slots they gave
	for _, r := range replies {
		if r.Err == nil && r.V.Status > 0 {
			given[r.V.Slots]++
			if given[r.V.Slots] > t.granted {
				t.slots, t.granted, t.taken = r.V.Slots, given[r.V.Slots], r.V.Status
			}
		}
	}
	for _, r := range replies {
		switch {
		case r.Err != nil:
		case r.V.Status > 0:
			if r.V.Slots == t.slots {
				t.fence = max(t.fence, r.V.Fence)
			}
		case r.V.Status < 0:
			t.tooMany++
			t.size = r.V.Size
		case t.retry < 0 || r.V.Retry < t.retry:
			t.retry = r.V.Retry
		}
	}
	return t
}

// makeFenceDurable raises the fencing counter to the chosen token on the
// nodes that granted (won); it succeeds when a majority did. Any later
// acquisition is granted by a majority, which overlaps this one, so it
// draws a larger token.
func (s *Semaphore) makeFenceDurable(ctx context.Context, won func(int) bool, fence int64) bool {
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, i int, nd *quorum.Node) (bool, error) {
		if !won(i) {
			return false, nil
		}
		v, err := nd.Driver.SemaphoreFenceRaise(ctx, s.keys.fence, fence, s.opts.idle)
		return v == 1, err
	})
	return quorum.Held(replies) >= s.c.q.Quorum
}

// semaphoreHold is a Semaphore lease's hold: n slots given to its token,
// the slots whose digest a majority gave (a node may have given the token
// others), and mark, its attempt's mark, which the release sets where it
// found nothing, as the attempt may still land there (see
// semaphore_release.lua). The hold of a waiter that gives up (holding no
// slots, no token) has its ticket instead, which its release takes out
// of line.
type semaphoreHold struct {
	keys       semaphoreKeys
	token      string
	n          int64
	slots      int64
	mark       string
	ticket     string
	ttl        time.Duration    // how long a lease's mark stays, or a leaving waiter's
	byPermitID bool             // Semaphore.Release's, which marks the attempt so that the lease hears of it
	byID       *atomic.Bool     // a lease's: a node said a release by permit ID gave its permits back
	waiter     *semaphoreWaiter // a leaving waiter's
}

func (h semaphoreHold) id() string {
	return strconv.FormatInt(h.n, 10) + "-" + h.token + "-" + strconv.FormatInt(h.slots, 10) + "-" + strconv.FormatInt(h.ttl.Milliseconds(), 10)
}

func (h semaphoreHold) extend(ctx context.Context, nd *quorum.Node, ttl time.Duration) (bool, error) {
	v, err := nd.Driver.SemaphoreExtend(ctx, driver.SemaphoreExtendRequest{Permits: h.keys.permits, Holders: h.keys.holders, Mark: h.mark, Token: h.token, N: h.n, Slots: h.slots, TTL: ttl})
	h.heard(v)
	return v == 1, err
}

// heard notes a node's answer that a release by permit ID gave the
// lease's permits back (2), for lostWhy.
func (h semaphoreHold) heard(v int64) {
	if v == 2 && h.byID != nil {
		h.byID.Store(true)
	}
}

// errReleasedByID is the ErrLost of a lease whose permits a release by
// permit ID (Semaphore.Release, ReleaseAll or ForceRelease)
// gave back.
var errReleasedByID = fmt.Errorf("%w (its permits were given back by Semaphore.Release, ReleaseAll or ForceRelease)", ErrLost)

// lostWhy is errReleasedByID once a node said that a release by permit ID
// gave the lease's permits back; else nil.
func (h semaphoreHold) lostWhy() error {
	if h.byID != nil && h.byID.Load() {
		return errReleasedByID
	}
	return nil
}

func (h semaphoreHold) release(ctx context.Context, nd *quorum.Node) (bool, error) {
	if h.waiter != nil && h.waiter.joins.Load() == 0 {
		return false, nil
	}
	v, err := nd.Driver.SemaphoreRelease(ctx, driver.SemaphoreReleaseRequest{Permits: h.keys.permits, Holders: h.keys.holders, Queue: h.keys.queue, Tickets: h.keys.tickets, Mark: h.mark, Token: h.token, N: h.n, Left: h.ttl, ByID: boolInt(h.byPermitID), Ticket: h.ticket})
	h.heard(v)
	return v == 1, err
}

// A permit ID (Lease.ID of a semaphore lease) names a lease's permits on
// the servers, so that a process other than the one that acquired them can
// extend or release them: a worker that hands its job on hands the ID on.
// It is "<n>-<token>-<slots>-<ttl>": how many permits, the lease's random
// token, the digest of the slots it won (a node that answered late may
// have given the token other slots, which do not count for the lease),
// and the TTL it was acquired with, in milliseconds: a release that finds
// nothing on a node marks the attempt there for that long, as it may
// still land (see semaphore_release.lua).

// Release gives back the permits of the semaphore lease with permit ID id,
// from any Client. The Lease that holds them learns it at its next Extend
// (its watchdog's too) or Unlock, which return ErrLost saying that
// Semaphore.Release gave them back, and its Done closes then.
// It returns ErrNotHeld when they had expired or were released already,
// ErrNoQuorum when too few nodes answered to tell (a node that did not
// answer may have given them back: call Release again to find out), and
// ErrInvalid, writing nothing, when id is not a permit ID of this
// semaphore's form.
func (s *Semaphore) Release(ctx context.Context, id string) error {
	h, err := s.holdOf(ctx, id)
	if err != nil {
		return err
	}
	// As Lease.Unlock, a node that cannot serve the release yet is asked
	// again, here while ctx allows: how long the permits last is the
	// holder's to know.
	var serveUntil time.Time
	if d, ok := ctx.Deadline(); ok {
		serveUntil = d
	}
	replies := quorum.Vote(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		return h.release(ctx, nd)
	}, quorum.Ballot[bool]{ServeUntil: serveUntil})
	return heldOn(ctx, s.c, replies)
}

// ReleaseAll gives back the permits of the semaphore leases with permit
// IDs ids, all or none, from any Client, in one call per node: a node
// where any of them no longer holds all its permits gives back none. The
// Leases that hold them learn it as from Release. It returns ErrNotHeld,
// naming the IDs not held, when a majority of nodes did not give them
// all back; with a quorum, the nodes that held them all gave them back
// even then, as a Release that fails may have. A node that did not answer
// is asked once more where its answer decides. It returns ErrNoQuorum
// when too few nodes answered to tell, and ErrInvalid, writing nothing,
// when ids is empty, longer than MaxSemaphoreReleaseAll, names a lease
// twice, or holds one that is not a permit ID of this semaphore's form.
func (s *Semaphore) ReleaseAll(ctx context.Context, ids ...string) error {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return err
	}
	if len(ids) == 0 || len(ids) > MaxSemaphoreReleaseAll {
		return invalid("ReleaseAll on semaphore %q with %d permit IDs: pass 1 to MaxSemaphoreReleaseAll (%d)", s.name, len(ids), MaxSemaphoreReleaseAll)
	}
	marks, holds, tokens := make([]string, len(ids)), make([]string, len(ids)), make(map[string]string, len(ids))
	for i, id := range ids {
		h, err := s.holdOf(ctx, id)
		if err != nil {
			return err
		}
		if other, ok := tokens[h.token]; ok {
			return invalid("ReleaseAll on semaphore %q: permit IDs %q and %q name the same lease; pass each once", s.name, other, id)
		}
		tokens[h.token] = id
		marks[i] = h.mark
		holds[i] = h.token + ":" + strconv.FormatInt(h.n, 10) + ":" + strconv.FormatInt(h.ttl.Milliseconds(), 10)
	}
	k, call := s.keys, s.keys.newCall()
	var serveUntil time.Time // as Release, asked again while ctx allows
	if d, ok := ctx.Deadline(); ok {
		serveUntil = d
	}
	ballot := quorum.Ballot[driver.SemaphoreReleaseAllReply]{ServeUntil: serveUntil}
	req := driver.SemaphoreReleaseAllRequest{Permits: k.permits, Holders: k.holders, Queue: k.queue, Tickets: k.tickets, Call: call, Marks: marks, Holds: strings.Join(holds, " ")}
	replies := quorum.Vote(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (driver.SemaphoreReleaseAllReply, error) {
		return nd.Driver.SemaphoreReleaseAll(ctx, req)
	}, ballot)
	given := func(r quorum.Reply[driver.SemaphoreReleaseAllReply]) bool { return r.Err == nil && r.V.Released == 1 }
	yes := quorum.Count(len(replies), func(i int) bool { return given(replies[i]) })
	if n := quorum.Unanswered(s.c.q, replies); n > 0 && yes < s.c.q.Quorum && yes+n >= s.c.q.Quorum {
		// The nodes that did not answer decide: each is asked once more.
		// Where the call gave the permits back, its mark answers a copy as
		// the call did; where it did not land, the copy is the call.
		replies = quorum.Vote(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, i int, nd *quorum.Node) (driver.SemaphoreReleaseAllReply, error) {
			if r := replies[i]; r.Err == nil || nd.Driver.IsServerError(r.Err) {
				return r.V, r.Err
			}
			return nd.Driver.SemaphoreReleaseAll(ctx, req)
		}, ballot)
	}
	released := make([]quorum.Reply[bool], len(replies))
	notHeld := make([]int, len(ids)) // by ID, the nodes that answered it was not
	for i, r := range replies {
		released[i] = quorum.Reply[bool]{V: given(r), Err: r.Err}
		if r.Err != nil || r.V.Released == 1 {
			continue
		}
		if r.V.Released != 0 {
			released[i].Err = fmt.Errorf("redlock: semaphore_release_all.lua refused its arguments (%d)", r.V.Released)
		}
		for _, at := range r.V.NotHeld {
			if j, err := strconv.Atoi(at); err == nil && j >= 1 && j <= len(ids) {
				notHeld[j-1]++
			}
		}
	}
	if err := heldOn(ctx, s.c, released); !errors.Is(err, ErrNotHeld) {
		return err
	}
	// The IDs that a majority could not have held; where each was held on
	// a majority but no majority held them all, those some node lacked.
	var named []string
	for _, lacking := range []int{len(replies) - s.c.q.Quorum + 1, 1} {
		for j, n := range notHeld {
			if n >= lacking {
				named = append(named, ids[j])
			}
		}
		if len(named) > 0 {
			break
		}
	}
	return fmt.Errorf("%w: semaphore %q did not give back the %d permit IDs on a majority of nodes, as these were not held: %q", ErrNotHeld, s.name, len(ids), named)
}

// Extend resets the TTL of the permits with permit ID id to ttl, from any
// Client. A Lease held for them keeps its own validity deadline: extend
// through the Lease where there is one. Errors are those of Release, and
// ErrInvalid for a TTL Client.Semaphore would refuse.
func (s *Semaphore) Extend(ctx context.Context, id string, ttl time.Duration) error {
	h, err := s.holdOf(ctx, id)
	if err != nil {
		return err
	}
	o := s.opts
	o.ttl = ttl
	if err := o.validate(s.name); err != nil {
		return err
	}
	replies := quorum.Fanout(ctx, s.c.q, o.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		ok, err := h.extend(ctx, nd, ttl)
		return nd.Extended(ctx, o.timing(), s.names.acked, ok, err)
	})
	return heldOn(ctx, s.c, replies)
}

// holdOf checks the call and parses id into the hold it names.
func (s *Semaphore) holdOf(ctx context.Context, id string) (semaphoreHold, error) {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return semaphoreHold{}, err
	}
	parts := strings.Split(id, "-")
	if len(parts) != 4 {
		return semaphoreHold{}, notPermitID(id, s.name)
	}
	n, errN := strconv.ParseInt(parts[0], 10, 32)
	slots, errS := strconv.ParseInt(parts[2], 10, 64)
	ttl, errT := strconv.ParseInt(parts[3], 10, 64)
	if errT == nil && (ttl < 1 || ttl > maxDuration.Milliseconds()) {
		errT = strconv.ErrRange
	}
	o := s.opts
	o.ttl = time.Duration(ttl) * time.Millisecond
	if errN != nil || errS != nil || errT != nil || n < 1 || n > maxPermitsInID || slots < 0 || slots >= digestBound || !isHolderToken(parts[1]) ||
		o.validate(s.name) != nil {
		return semaphoreHold{}, notPermitID(id, s.name)
	}
	return semaphoreHold{keys: s.keys, token: parts[1], n: n, slots: slots, mark: s.keys.mark(parts[1]), ttl: o.ttl, byPermitID: true}, nil
}

// maxPermitsInID is the most permits a permit ID may name: the
// MaxSemaphoreAcquire of earlier versions, so that a lease one of them
// took can still be released and extended during a rolling upgrade (its
// scripts' work is bounded by it all the same).
const maxPermitsInID = 500

func notPermitID(id, name string) error {
	return invalid("%q is not a permit ID of semaphore %q: pass the Lease.ID of one of its leases", id, name)
}

// isToken reports whether s looks like a token from crypto/rand.Text: 26
// characters of the standard base32 alphabet.
func isToken(s string) bool {
	return len(s) == 26 && strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") == ""
}

// heldOn is the result of acting on a hold by its ID: nil when a majority
// held it, else ErrNoQuorum (or ctx's error) or ErrNotHeld. A node that
// did not answer may have held it: while those and the nodes that held it
// could be a majority, the outcome is unknown (errHeldUnknown), not
// ErrNotHeld.
func heldOn(ctx context.Context, c *Client, replies []quorum.Reply[bool]) error {
	held := quorum.Held(replies)
	if held >= c.q.Quorum {
		return nil
	}
	if err := quorum.NoQuorum(ctx, c.q, replies); err != nil {
		return err
	}
	if held+quorum.Unanswered(c.q, replies) >= c.q.Quorum {
		if err := quorum.Ended(ctx); err != nil {
			return err
		}
		return errors.Join(errHeldUnknown, quorum.NodeErrors(c.q, replies))
	}
	return ErrNotHeld
}

// errHeldUnknown is the ErrNoQuorum of a call on a hold by its ID whose
// outcome the nodes that answered do not decide.
var errHeldUnknown = fmt.Errorf("%w: too few nodes answered to tell whether a majority held the permits (where they did, the call took effect); call again: ErrNotHeld then says they are given back or expired", ErrNoQuorum)

// SemaphoreState is what the servers hold for a Semaphore name at one
// moment: its permits in use, by the lease that holds them, its number of
// permits, and how many wait. Semaphore.State returns it. The summary
// fields are what a majority of nodes agree on; PerNode has each node's
// own view.
type SemaphoreState struct {
	// Name is the semaphore's name.
	Name string
	// Size is the number of permits: the one stored (by SetPermits,
	// TrySetPermits or AddPermits), or, when none is stored, the one this
	// Semaphore was made with.
	Size int
	// InUse is the number of permits held.
	InUse int
	// Leases are the leases a majority of nodes hold (of those the nodes
	// list), soonest to expire first.
	Leases []PermitLease
	// Token is the fencing token of the latest acquisition, as a majority
	// has it.
	Token uint64
	// Waiting is the length of the line under Notify (Poll waiters do not
	// queue).
	Waiting int
	// PerNode is each node's view, in the order of the Client's nodes.
	PerNode []SemaphoreNodeState
}

// SemaphoreNodeState is one node's view of a Semaphore name.
type SemaphoreNodeState struct {
	// Err is the node's error; the other fields are then zero.
	Err error
	// Size is the number of permits stored; 0 when none is.
	Size int
	// InUse is the number of permits held on this node.
	InUse int
	// Leases are the leases that hold them, of the first LineShown
	// permits to expire, soonest to expire first.
	Leases []PermitLease
	// Token is this node's fencing counter.
	Token uint64
	// Waiting is the number of tickets in this node's line.
	Waiting int
}

// PermitLease is one lease's permits.
type PermitLease struct {
	// Holder is the token the lease holds its permits with on the
	// servers: the part of its permit ID (Lease.ID) after the first "-"
	// and before the next. The rest of the permit ID is known only to the
	// lease, so that only its holder can extend or release the permits.
	Holder string
	// Metadata is what the lease was taken with (WithMetadata); empty for
	// none.
	Metadata string
	// Permits are the numbers of the permits (1 to the size) it holds.
	Permits []int
	// TTL is how long it still holds them without an extension.
	TTL time.Duration
}

// State reads the permits in use, by lease, the number of permits and the
// line's length from every node at once; it touches no permit and writes
// nothing. Its errors are those of Mutex.State. It costs one round trip: a read-only script per node, O(log n + LineShown) in the
// permits. As Mutex.State, it is for operators and dashboards.
func (s *Semaphore) State(ctx context.Context) (SemaphoreState, error) {
	st := SemaphoreState{Name: s.name}
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return st, err
	}
	k := s.keys
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (SemaphoreNodeState, error) {
		r, err := nd.Driver.SemaphoreState(ctx, k.permits, k.holders, k.size, k.fence, k.queue, LineShown)
		if err != nil {
			return SemaphoreNodeState{}, err
		}
		n := SemaphoreNodeState{Size: int(r.Size), InUse: int(r.Held), Token: uint64(max(r.Fence, 0)), Waiting: int(r.Waiting)}
		if len(r.Slots)%3 != 0 {
			return SemaphoreNodeState{}, fmt.Errorf("%w: semaphore_state.lua listed %d strings, not token, slot and time each", driver.ErrUnexpectedReply, len(r.Slots))
		}
		at := map[string]int{} // a lease's place in n.Leases
		for i := 0; i < len(r.Slots); i += 3 {
			slot, err1 := strconv.Atoi(r.Slots[i+1])
			ms, err2 := strconv.ParseInt(r.Slots[i+2], 10, 64)
			if err := errors.Join(err1, err2); err != nil {
				return SemaphoreNodeState{}, fmt.Errorf("%w: semaphore_state.lua: %w", driver.ErrUnexpectedReply, err)
			}
			id := r.Slots[i]
			if _, ok := at[id]; !ok {
				at[id] = len(n.Leases)
				n.Leases = append(n.Leases, PermitLease{Holder: id, Metadata: MetadataOf(id), TTL: time.Duration(ms) * time.Millisecond})
			}
			l := &n.Leases[at[id]]
			l.Permits = append(l.Permits, slot)
		}
		for _, l := range n.Leases {
			slices.Sort(l.Permits)
		}
		return n, nil
	})
	st.PerNode = make([]SemaphoreNodeState, len(replies))
	var answered []SemaphoreNodeState
	leases := map[string][]PermitLease{}
	for i, r := range replies {
		if r.Err != nil {
			st.PerNode[i] = SemaphoreNodeState{Err: s.c.q.NodeError(i, r.Err)}
			continue
		}
		st.PerNode[i] = r.V
		answered = append(answered, r.V)
		for _, l := range r.V.Leases {
			leases[l.Holder] = append(leases[l.Holder], l)
		}
	}
	if err := quorum.NoQuorum(ctx, s.c.q, replies); err != nil {
		return st, err
	}
	q := s.c.q.Quorum
	st.Size = cmp.Or(quorum.MajorityHas(q, answered, func(n SemaphoreNodeState) int { return n.Size }), s.permits)
	st.InUse = quorum.MajorityHas(q, answered, func(n SemaphoreNodeState) int { return n.InUse })
	st.Token = quorum.MajorityHas(q, answered, func(n SemaphoreNodeState) uint64 { return n.Token })
	st.Waiting = quorum.MajorityHas(q, answered, func(n SemaphoreNodeState) int { return n.Waiting })
	for _, ls := range leases {
		if len(ls) >= q {
			ttl := quorum.MajorityHas(q, ls, func(l PermitLease) time.Duration { return l.TTL })
			st.Leases = append(st.Leases, PermitLease{Holder: ls[0].Holder, Metadata: ls[0].Metadata, Permits: ls[0].Permits, TTL: ttl})
		}
	}
	slices.SortFunc(st.Leases, func(a, b PermitLease) int { return cmp.Or(cmp.Compare(a.TTL, b.TTL), cmp.Compare(a.Holder, b.Holder)) })
	return st, nil
}

// ForceRelease gives back the permits of one lease, whoever holds them,
// and wakes the waiter first in line, as Mutex.ForceUnlock does: it
// breaks the bound on permits held by design. id is the lease's permit ID
// (Lease.ID) or the Holder that State lists for it; the lease's next
// Extend or Unlock returns ErrLost. It returns ErrInvalid, writing
// nothing, when id is neither, and ErrNotHeld, writing nothing, when a
// majority answered and no node lists the Holder id (mistyped, or its
// permits expired or were released).
func (s *Semaphore) ForceRelease(ctx context.Context, id string) error {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return err
	}
	if isHolderToken(id) {
		return s.forceHolder(ctx, id)
	}
	h, err := s.holdOf(ctx, id)
	if err != nil {
		return err
	}
	return force(ctx, s.c, &s.opts, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		_, err := h.release(ctx, nd)
		return 0, err
	})
}

// forcedByHolder is the byID of a force-release by holder token (see
// semaphore_release.lua).
const forcedByHolder = 2

// forceHolder gives back all of holder's permits, however many: the
// release reads the holder's list of slots on each node.
func (s *Semaphore) forceHolder(ctx context.Context, holder string) error {
	k := s.keys
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		v, err := nd.Driver.SemaphoreRelease(ctx, driver.SemaphoreReleaseRequest{Permits: k.permits, Holders: k.holders, Queue: k.queue, Tickets: k.tickets, Mark: k.mark(holder), Token: holder, N: maxPermitsInID, Left: s.opts.ttl, ByID: forcedByHolder})
		return v == 1, err
	})
	if err := quorum.NoQuorum(ctx, s.c.q, replies); err != nil {
		return err
	}
	if quorum.Held(replies) == 0 {
		return ErrNotHeld
	}
	return nil
}

// DrainPermits takes every permit free now, at most MaxSemaphoreAcquire,
// in one attempt, as one lease, and returns it with the number of permits
// it holds; it costs what a TryAcquire of as many does. Like TryAcquire it
// does not wait, and takes nothing while waiters wait in line. When none
// is free it returns ErrNotAcquired, as TryAcquire does, so that a nil
// lease never comes with a nil error; with a quorum, also when the nodes
// of no majority have the same permits free (while leases hold theirs on
// different majorities). Its other errors are TryAcquire's.
func (s *Semaphore) DrainPermits(ctx context.Context) (*Lease, int, error) {
	if err := s.check(ctx, 1); err != nil {
		return nil, 0, err
	}
	a := s.opts.acquiring(ctx, s.name, false)
	a.attempt()
	l, _, err := s.attempt(ctx, -MaxSemaphoreAcquire, nil)
	if l, err = a.done(l, err); err != nil {
		return nil, 0, err
	}
	return l, int(l.hold.(semaphoreHold).n), nil
}

// TrySetPermits stores the number of permits as SetPermits does, but only
// if none is stored yet, and reports whether it stored it. The number
// given to Client.Semaphore is never stored: a semaphore has no number set
// until SetPermits, TrySetPermits or AddPermits stores one, or again once
// a stored number lapsed (WithIdleExpiry after the semaphore's last use).
// It costs one script call per node, and returns true when a majority of
// nodes stored it; false when a majority answered but fewer stored it,
// the others having a number already (where it did store it, it stays:
// SetPermits makes every node alike). It returns ErrInvalid, writing
// nothing, for a number below 1 or above MaxSemaphorePermits, and
// ErrNoQuorum when too few nodes answered. Where it stores the number, a
// node also keeps a small mark of the call for WithIdleExpiry (10 minutes
// by default), so that a copy of its request that the network delivers
// meanwhile (a client that resends it on a broken connection) still
// answers that the call stored it. Calling TrySetPermits again after
// ErrNoQuorum makes a new call, which answers false where the first one's
// requests stored the number.
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return false, err
	}
	if permits <= 0 || int64(permits) > MaxSemaphorePermits {
		return false, invalid("TrySetPermits(%d) on semaphore %q: the number of permits must be from 1 to MaxSemaphorePermits", permits, s.name)
	}
	call := s.keys.newCall()
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		return nd.Driver.SemaphoreTrySetPermits(ctx, s.keys.size, s.keys.queue, s.keys.tickets, call, int64(permits), s.opts.idle)
	})
	if quorum.Held(replies) >= s.c.q.Quorum {
		return true, nil
	}
	return false, quorum.NoQuorum(ctx, s.c.q, replies)
}

// AddPermits adds delta permits to the number in force (the stored one,
// or the one given to Client.Semaphore while none is stored) and stores
// the sum, in one script call per node; a negative delta takes permits
// away.
// A raise wakes the waiter first in line, as a release does. A lowering
// revokes nothing: leases keep their permits, and new acquisitions wait
// until enough are released or expire. It returns ErrInvalid, writing
// nothing, for a delta of 0 or one that would leave fewer than 1 or more
// than MaxSemaphorePermits permits, and ErrNoQuorum when fewer than a
// majority applied it.
// Each call adds at most once on each node: where it adds, the node keeps
// a small mark of the call for WithIdleExpiry (10 minutes by default), and
// a copy of its request that the network delivers meanwhile (a client that
// resends it on a broken connection) adds nothing, and answers as the call
// did. Calling AddPermits again after ErrNoQuorum makes a new call, which
// adds again wherever the first one's requests landed or still land; so
// call it again only where adding twice is harmless, and otherwise use
// SetPermits, which stores a number.
func (s *Semaphore) AddPermits(ctx context.Context, delta int) error {
	if err := s.check(ctx, 1); err != nil {
		return err
	}
	if delta == 0 || int64(delta) > MaxSemaphorePermits || int64(delta) < -MaxSemaphorePermits {
		return invalid("AddPermits(%d) on semaphore %q: add from -MaxSemaphorePermits to MaxSemaphorePermits, not 0", delta, s.name)
	}
	call := s.keys.newCall()
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		total, err := nd.Driver.SemaphoreAddPermits(ctx, driver.SemaphoreAddPermitsRequest{Size: s.keys.size, Queue: s.keys.queue, Tickets: s.keys.tickets, Call: call, Delta: int64(delta), DefaultSize: int64(s.permits), Idle: s.opts.idle})
		return total > 0, err
	})
	if quorum.Held(replies) >= s.c.q.Quorum {
		return nil
	}
	if err := quorum.NoQuorum(ctx, s.c.q, replies); err != nil {
		return err
	}
	return invalid("AddPermits(%d) on semaphore %q would leave fewer than 1 or more than MaxSemaphorePermits permits; read the number with State", delta, s.name)
}

// TTL returns how long the permits with permit ID id are still held, from
// any Client, as Lease.TTL reads it: the time a majority of nodes still
// hold all of them, less the allowance for clock drift. It writes nothing.
// It returns ErrNotHeld when they expired or were released, ErrNoQuorum
// when too few nodes answered, and ErrInvalid when id is not a permit ID.
func (s *Semaphore) TTL(ctx context.Context, id string) (time.Duration, error) {
	h, err := s.holdOf(ctx, id)
	if err != nil {
		return 0, err
	}
	o := s.opts
	o.ttl = h.ttl // the drift allowance is the acquisition's
	until, replies, _ := quorum.HeldUntil(ctx, s.c.q, o.timing(), h.left, func(d time.Duration) time.Duration { return d })
	if !until.IsZero() {
		return max(time.Until(until), 0), nil
	}
	if err := quorum.NoQuorum(ctx, s.c.q, replies); err != nil {
		return 0, err
	}
	return 0, ErrNotHeld
}

func (h semaphoreHold) left(ctx context.Context, nd *quorum.Node) (time.Duration, error) {
	r, err := nd.Driver.SemaphoreTTL(ctx, h.keys.permits, h.keys.holders, h.mark, h.token, h.n, h.slots)
	if r.ByID {
		h.heard(2)
	}
	return r.TTL, err
}
