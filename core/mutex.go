package core

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

// Mutex is a distributed lock. Each successful Lock or TryLock returns a
// Lease, the handle of that one acquisition. A Mutex is safe for
// concurrent use and cheap: make one per name as needed.
type Mutex struct {
	c     *Client
	name  string
	names leaseNames // name alone, as a lease takes it
	named [2]string  // backs names: the name and its acked key
	opts  options
	keys  keyNames
}

// Mutex returns the lock called name. Options given here override the
// Client's for this lock. Bad options are reported by its methods.
func (c *Client) Mutex(name string, opts ...Option) *Mutex {
	m := &Mutex{c: c, name: name}
	c.optionsInto(&m.opts, "Mutex", opts)
	var k [6]string
	keysInto(k[:], m.opts.keyPrefix, name, "", ":fence", ":q", ticketInfix, forcedSuffix, ackedSuffix)
	m.keys = keyNames{lock: k[0], fence: k[1], queue: k[2], tickets: strings.TrimSuffix(k[3], ":"), noTicket: k[3], forced: k[4]}
	m.named = [2]string{name, k[5]}
	m.names = leaseNames{names: m.named[:1], acked: m.named[1:]}
	return m
}

// keyNames are the keys of one primitive; they share the hash tag {name},
// so every script touches one Redis Cluster slot.
type keyNames struct {
	lock, fence string
	queue       string // the Notify wait queue (see Mutex.lockQueued)
	tickets     string // the hash of the queue's tickets, fields named by their ids (see ticketIn in scripts/lua/lib/tickets.lua)
	noTicket    string // stands for the ticket of an attempt that does not queue; every ticket id starts with it
	forced      string // the lock's forced marker (see forcedKey)
}

func (c *Client) keys(o options, name string) keyNames {
	var k [5]string
	keysInto(k[:], o.keyPrefix, name, "", ":fence", ":q", ticketInfix, forcedSuffix)
	return keyNames{lock: k[0], fence: k[1], queue: k[2], tickets: strings.TrimSuffix(k[3], ":"), noTicket: k[3], forced: k[4]}
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// TryLock makes one attempt. It returns ErrNotAcquired when another owner
// holds the lock and ErrNoQuorum when too few nodes answered
// (ErrUnavailable or ErrReplicasBehind when they could not serve it yet).
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	a := m.opts.acquiring(ctx, m.name, false)
	a.attempt()
	l, _, err := m.attempt(ctx, nil)
	return a.done(l, err)
}

// Lock waits until the lock is acquired, ctx ends (its error is returned),
// or WithMaxAttempts attempts failed (ErrNotAcquired). It waits out nodes
// that fail (ErrNoQuorum, ErrUnavailable, ErrReplicasBehind): when ctx ends
// first, ctx's error is returned joined with the last of them.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	var (
		l   *Lease
		err error
		a   = m.opts.acquiring(ctx, m.name, true)
	)
	if n, ok := m.c.queues(&m.opts); ok {
		l, err = m.lockQueued(ctx, n, a)
	} else {
		l, err = line.Acquire(ctx, m.c.wait, m.opts.waiting(), func(ctx context.Context) (*Lease, string, time.Duration, error) {
			a.attempt()
			l, holderTTL, err := m.attempt(ctx, nil)
			return l, m.keys.lock, holderTTL, err
		})
	}
	return a.done(stillWanted(ctx, l, err))
}

// attempt runs one Redlock round (see quorum.Round): on failure it returns the
// holder's shortest remaining TTL as a hint. A queued waiter passes its
// ticket (see Mutex.lockQueued); nil stands for an attempt that does not
// queue.
func (m *Mutex) attempt(ctx context.Context, t *line.Ticket) (*Lease, time.Duration, error) {
	c, o := m.c, &m.opts
	// A queued waiter keeps its token, which its grants carry. An owner's
	// attempt takes a fresh one, as it is never granted: its undo then
	// drops its own lease and none of the owner's others. So does a
	// waiter's first attempt, which does not queue: it reads no mark on a
	// free name, and a copy of it landing after the waiter's lease was
	// released or forced free would hold the name under that lease's
	// token, bringing it back.
	holder := rand.Text() + o.metaTag()
	if t != nil && t.Join && o.owner == "" {
		holder = t.Token
	}
	h := m.hold(holder)
	if t != nil {
		t.Sent = time.Now()
		if t.Joined {
			// Only an attempt that queues stores secrets; one that does
			// not, before any did, has none to start afresh.
			t.Grants.Expect()
		}
	}
	a := ask(t)
	switch {
	case t == nil || !t.Join:
		// An attempt that does not queue has a ticket of its own, which
		// a release of its token that finds nothing marks: the attempt,
		// landing late (after its undo, or its lease's release, on a
		// stalled node) where the name is held, is then refused. An
		// owner's marks it as it lands, so a copy is refused too; a
		// plain one takes a free name without reading it (the
		// uncontended path), and a copy landing late holds it for its
		// TTL under a token no lease has.
		h.mark = line.RandomKey(m.keys.noTicket)
		h.own = h.mark
	case a.key != "":
		h.markTicket(a.key)
		if h.owned() {
			// Each of an owner's attempts has a lease token of its own.
			h.own = line.RandomKey(m.keys.noTicket)
		}
	}
	var won atomic.Bool  // an undo of a late answer then gives the node up
	var kept atomic.Bool // an undo left the lock with the waiter
	p := quorum.Round[grant]{
		Ask: func(ctx context.Context, i int, n *quorum.Node) (grant, error) {
			g, err := h.acquire(ctx, n, o.ttl, t, a)
			if t != nil {
				t.Grants.Observe(i, g.Acquired, g.Fence, err)
			}
			return g, err
		},
		Granted: acquired, Tally: countGrants, MayHold: mayHoldGrant,
		Undo: func(ctx context.Context, n *quorum.Node, r quorum.Reply[grant]) (bool, error) {
			if a.key != "" && h.owned() && !won.Load() {
				// A failed attempt of an owner's queued waiter, which
				// waits on: its ticket stays unmarked (its own mark, not).
				u := h
				u.mark, u.always = "", false
				return u.release(ctx, n)
			}
			if a.key == "" || !h.wake || h.owned() || won.Load() {
				return h.release(ctx, n)
			}
			// A failed attempt of a queued waiter, which waits on: its
			// ticket stays unmarked. A grant a release made it stays with
			// it where no live waiter is ahead (see release_wake.lua); a
			// free node it took is let go, or it would keep that node
			// while a lease that missed it holds the others. The reply
			// tells a grant, also one whose message has not come yet.
			ahead := int64(0)
			if r.Err == nil && r.V.Granted || t.Grants.WasGranted(n.Index) {
				ahead = a.arrival
			}
			k := h.keys
			v, err := n.Driver.ReleaseWake(ctx, driver.ReleaseWakeRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Forced: k.forced, Tickets: k.tickets, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Ahead: ahead})
			if v == 2 {
				kept.Store(true)
			}
			return v >= 1, err
		},
		Durable: func(ctx context.Context, replies []quorum.Reply[grant], _ func(int) bool, fence int64) bool {
			return h.makeFenceDurable(ctx, c, o, replies, fence)
		},
	}
	var held func(ctx context.Context, l *Lease, replies []quorum.Reply[grant], wins func(int) bool)
	if t != nil && len(c.q.Nodes) > 1 { // a vote on one node waits for its answer
		p.Voted = func(replies []quorum.Reply[grant]) {
			for i, r := range replies {
				if quorum.StillOut(r) {
					t.Grants.Observe(i, false, 0, r.Err) // its grants may be undone yet
				}
			}
		}
	}
	if t != nil && t.Joined { // won tells only the undo of a queued attempt
		held = func(ctx context.Context, l *Lease, replies []quorum.Reply[grant], wins func(int) bool) {
			won.Store(true)
			if len(c.q.Nodes) > 1 {
				m.leaveBehind(ctx, l, t, func(i int) bool { return !wins(i) })
			}
		}
	}
	l, r := play(ctx, c, o, m.names, p, func(quorum.Outcome[grant]) hold { return &h }, held)
	if t != nil && r.Err != nil && r.Unsure {
		t.Rotate()
	}
	if r.Err != nil && kept.Load() {
		// It keeps nodes that a later waiter may need, which may not see
		// it in line there yet: it tries again after its backoff, not at
		// the holder's TTL, or the two could wait each other out.
		r.Hint = 0
	}
	return l, r.Hint, r.Err
}

// grant is one node's answer to an acquisition.
type grant struct {
	Acquired  bool
	Fence     int64
	HolderTTL time.Duration
	Granted   bool // the lock held the waiter's token already, as a release grants it
}

// countGrants reads the answers of a round whose nodes grant or refuse:
// the lease's token is the highest the grants drew, and the hint the
// shortest remaining TTL among the nodes held by someone else.
func countGrants(replies []quorum.Reply[grant]) quorum.Outcome[grant] {
	out := quorum.Outcome[grant]{Wins: func(r quorum.Reply[grant]) bool { return r.Err == nil && r.V.Acquired }, Hint: -1}
	for _, r := range replies {
		switch {
		case r.Err != nil:
		case r.V.Acquired:
			out.Fence = max(out.Fence, r.V.Fence)
		case r.V.HolderTTL >= 0 && (out.Hint < 0 || r.V.HolderTTL < out.Hint):
			out.Hint = r.V.HolderTTL
		}
	}
	return out
}

func acquired(g grant) bool { return g.Acquired }

// mayHoldGrant: a node that granted holds the attempt, and one whose
// call failed may.
func mayHoldGrant(r quorum.Reply[grant]) bool { return r.Err != nil || r.V.Acquired }

// hold is the hold of this Mutex's lease with holder, its random token
// (or its queued waiter's).
func (m *Mutex) hold(holder string) mutexHold { return newMutexHold(m.keys, holder, &m.opts) }

// newMutexHold is the hold of the lease holder on the lock keys k, as o
// makes it (reentrant for an owner; releasing through the queue under
// Notify).
func newMutexHold(k keyNames, holder string, o *options) mutexHold {
	return mutexHold{keys: k, holder: holder, owner: o.owner, wake: o.wait == Notify, reserve: o.reserve(), idle: o.idle, ttl: o.ttl, timeout: o.perNodeTimeout(), forcedFlag: newForcedFlag()}
}

// mutexHold is a Mutex lease's hold: its random token in a string key, or,
// for a reentrant lock, a field of its own in the owner's hash. A lease
// holds it by pointer, the one its attempt's closures share: a copy in
// the interface would cost an allocation per lease.
type mutexHold struct {
	keys       keyNames
	holder     string // the lease's random token
	owner      string // the reentrant lock's owner; "" for a plain lock
	wake       bool   // release wakes the next queued waiter (Notify)
	reserve    time.Duration
	idle       time.Duration // how long the fencing counter outlives its last draw
	mark       string        // the ticket of its attempt, which a release that finds nothing marks; "" for none
	own        string        // the attempt's own mark (an owner's sets it as it lands, see lib/left.lua); "" for a plain waiter's, which shares its ticket
	always     bool          // a release marks it also when it finds the lock: a queued waiter's ticket
	ttl        time.Duration // how long such a mark stays
	timeout    time.Duration // the node timeout
	forcedFlag               // a plain lease's: a node said a force-release freed it
}

func (h mutexHold) owned() bool { return h.owner != "" }

// ticket is the ticket key its attempt carries when it does not queue.
func (h mutexHold) ticket() string { return cmp.Or(h.mark, h.keys.noTicket) }

func (h mutexHold) id() string { return h.holder }

// asked is what an attempt of a queued waiter asks every node to store in
// its ticket, read from the ticket before the attempt's requests: a
// request that outlives its round (see quorum.Vote) must not read the ticket as
// the waiter's next attempt changes it.
type asked struct {
	key     string // "" for an attempt that does not queue
	arrival int64
	stem    string   // of the tokens it takes grants over from (see line.Ticket.Rotate)
	secrets []string // by node
}

// ask is what t's attempt about to start asks; nil and a ticket that does
// not join ask nothing.
func ask(t *line.Ticket) asked {
	if t == nil || !t.Join {
		return asked{}
	}
	return asked{key: t.Key, arrival: t.Arrival, stem: t.Stem, secrets: t.Grants.Secrets()}
}

// acquire takes the lock on one node, plainly or for the owner. A queued
// waiter passes its ticket (see Mutex.lockQueued) and what its attempt
// asks; nil does not queue.
func (h mutexHold) acquire(ctx context.Context, n *quorum.Node, ttl time.Duration, t *line.Ticket, a asked) (grant, error) {
	k := h.keys
	ticket, join, arrival, secret, stem, spend := h.ticket(), int64(0), int64(0), "", "", int64(0)
	switch {
	case a.key != "":
		ticket, join, arrival, secret, stem = a.key, 1, a.arrival, a.secrets[n.Index], a.stem
	case h.own != "":
		spend = 1
	}
	var g grant
	var err error
	if h.owned() {
		r, e := n.Driver.MutexAcquireOwned(ctx, driver.MutexAcquireOwnedRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Tickets: k.tickets, Ticket: ticket, Mark: cmp.Or(h.own, ticket), Owner: h.owner, Lease: h.holder, TTL: ttl, Join: join, Arrival: arrival, Idle: h.idle, Secret: secret})
		g, err = grant{Acquired: r.Acquired, Fence: r.Fence, HolderTTL: r.HolderTTL}, e
	} else {
		r, e := n.Driver.MutexAcquire(ctx, driver.MutexAcquireRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Tickets: k.tickets, Ticket: ticket, Token: h.holder, TTL: ttl, Join: join, Arrival: arrival, Secret: secret, Idle: h.idle, Stem: stem, Spend: spend})
		g, err = grant(r), e
	}
	return g, err
}

func (h mutexHold) extend(ctx context.Context, n *quorum.Node, ttl time.Duration) (bool, error) {
	if h.owned() {
		v, err := n.Driver.ExtendOwned(ctx, h.keys.lock, h.keys.tickets, h.holder, ttl, cmp.Or(h.own, h.ticket()))
		return v == 1, err
	}
	v, err := n.Extend(ctx, h.keys.lock, h.keys.tickets, h.ticket(), h.keys.forced, h.holder, ttl)
	h.heard(v)
	return v == 1, err
}

// markTicket makes a queued waiter's lease mark its ticket as left with
// every release (see release): its attempts, which carry the lease's
// token, may still land on a node after the release, where none of its
// later attempts would ever take the lock from them.
func (h *mutexHold) markTicket(ticket string) {
	h.mark, h.always = ticket, true
}

// release gives the hold up on n. One that finds nothing, or gets no
// answer, releases again with a mark on the attempt's ticket (h.mark) in
// one script (ReleaseOrMark), as the attempt may still land there: one
// that landed before is released, one that lands after is refused, in
// whatever order a stalled server runs them. The second call gets a node
// timeout of its own: the first may have used up ctx's. It reports what
// the first release found, and its error: the first may still land, and
// a waiter that reuses the token must then take a fresh one (unsure). A
// queued waiter's lease, and an owner's, release and mark in one call.
func (h mutexHold) release(ctx context.Context, n *quorum.Node) (bool, error) {
	k := h.keys
	if h.owned() {
		left, err := n.Driver.ReleaseOwned(ctx, driver.ReleaseOwnedRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Tickets: k.tickets, Ticket: h.ticket(), Mark: cmp.Or(h.own, h.ticket()), Lease: h.holder, Reserve: h.reserve, Idle: h.idle, Left: h.ttl, Always: boolInt(h.always)})
		return left >= 0, err
	}
	if h.always {
		v, err := n.Driver.ReleaseOrMark(ctx, driver.ReleaseOrMarkRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Tickets: k.tickets, Ticket: h.mark, Forced: k.forced, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Left: h.ttl, Always: 1})
		h.heard(v)
		return v == 1, err
	}
	released, err := h.releaseOnly(ctx, n)
	if released || h.mark == "" {
		return released, err
	}
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	defer cancel()
	v, err2 := n.Driver.ReleaseOrMark(mctx, driver.ReleaseOrMarkRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Tickets: k.tickets, Ticket: h.mark, Forced: k.forced, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Left: h.ttl, Always: 0})
	h.heard(v)
	if err != nil {
		return false, err
	}
	return false, err2
}

func (h mutexHold) releaseOnly(ctx context.Context, n *quorum.Node) (bool, error) {
	k := h.keys
	switch {
	case h.wake:
		// No native command also hands the lock on to the next waiter:
		// Notify pays for the hand-off with a script. While a Cluster
		// slot migrates, its masters split the lock from its line
		// (TRYAGAIN) for as long as moving the slot's keys takes: the
		// release is asked again for half of what the call has left.
		req := driver.ReleaseWakeRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Forced: k.forced, Tickets: k.tickets, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Ahead: 0}
		v, err := n.Driver.ReleaseWake(ctx, req)
		migrating := n.Cluster && driver.IsTryAgain(err)
		if migrating {
			wctx, cancel := halfLeft(ctx)
			r := quorum.RetryTransient(wctx, n, func(ctx context.Context) (int64, error) { return n.Driver.ReleaseWake(ctx, req) })
			v, err = r.V, r.Err
			// A call cut by its half (a slow answer) is no answer either:
			// the release alone below is safe whether or not it lands.
			migrating = driver.IsTryAgain(err) || wctx.Err() != nil && ctx.Err() == nil
			cancel()
		}
		if !migrating {
			h.heard(v)
			return v == 1, err
		}
		// The migration lasts: the lock alone is released, so that a
		// migration that stalls keeps no one waiting, and the waiters
		// take the lock at their own retry.
	}
	v, err := n.Release(ctx, k.lock, h.holder)
	if err == nil && v == 0 {
		// Neither a native compare-and-delete nor release.lua reads the
		// forced marker: only a release that found the lock gone asks.
		h.askForced(ctx, n, k.lock, h.holder)
	}
	return v == 1, err
}

// halfLeft is ctx bounded by half of the time its deadline leaves (a
// quarter of a second without one), for a call that must leave time for
// another after it.
func halfLeft(ctx context.Context) (context.Context, context.CancelFunc) {
	d, ok := ctx.Deadline()
	if !ok {
		return context.WithTimeout(ctx, 250*time.Millisecond)
	}
	return context.WithTimeout(ctx, time.Until(d)/2)
}

// makeFenceDurable raises the fencing counter to the chosen token on the
// nodes that granted, while they still hold the lock; it succeeds when a
// majority did. See the package documentation for why this makes tokens
// increase across holders. When every granting node drew the chosen token
// itself, their counters are there already and no round is needed: the
// usual case, as each acquisition draws on every node it reaches.
func (h mutexHold) makeFenceDurable(ctx context.Context, c *Client, o *options, grants []quorum.Reply[grant], fence int64) bool {
	if !slices.ContainsFunc(grants, func(g quorum.Reply[grant]) bool { return g.Err == nil && g.V.Acquired && g.V.Fence != fence }) {
		return true // granted >= quorum was checked by the caller
	}
	return h.raiseFence(ctx, c, o, grants, fence)
}

// raiseFence is makeFenceDurable's round, apart so that only a round that
// needs it pays for its closure.
func (h mutexHold) raiseFence(ctx context.Context, c *Client, o *options, grants []quorum.Reply[grant], fence int64) bool {
	replies := quorum.Fanout(ctx, c.q, o.timing(), func(ctx context.Context, i int, n *quorum.Node) (bool, error) {
		if g := grants[i]; g.Err != nil || !g.V.Acquired {
			return false, nil
		}
		v, err := n.Driver.FenceRaise(ctx, h.keys.lock, h.keys.fence, h.holder, fence, h.idle)
		return v == 1, err
	})
	return quorum.Held(replies) >= c.q.Quorum
}

// lockQueued is Lock under Notify: a line of one ticket, registered
// before its first attempt that queues (none, when the first attempt
// takes the name).
func (m *Mutex) lockQueued(ctx context.Context, n *line.Notifier, a *acquiring) (*Lease, error) {
	t := n.UnlistedTicket(m.keys.lock, rand.Text()+m.opts.metaTag(), nil)
	defer n.DropTicket(t)
	q := line.Line[*Lease]{N: n, O: m.opts.waiting(),
		Attempt: func(ctx context.Context, join bool) (*Lease, *line.Ticket, time.Duration, error) {
			if join {
				n.Enlist(t)
			}
			t.Join = join
			t.Joined = t.Joined || join
			a.attempt()
			l, holderTTL, err := m.attempt(ctx, t)
			return l, t, holderTTL, err
		},
		Quit:    func(err error) error { return m.leave(ctx, t, err) },
		Granted: func(ctx context.Context) *Lease { return m.grantedLease(ctx, t) },
	}
	return q.Wait(ctx)
}

// leave takes a ticket that may be queued out of the queue on every node,
// handing on a grant or reservation made to it, and returns err.
func (m *Mutex) leave(ctx context.Context, t *line.Ticket, err error) error {
	if t.Joined {
		leaveQueue(ctx, m.c, &m.opts, m.keys, t, quorum.Every, false, true)
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
func (m *Mutex) leaveBehind(ctx context.Context, l *Lease, t *line.Ticket, missed func(int) bool) {
	m.c.q.InBackground(func() { leaveQueue(ctx, m.c, &m.opts, m.keys, t, missed, true, true) })
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
// and a leave that failed on a node is asked again (quorum.Retry).
func leaveQueue(ctx context.Context, c *Client, o *options, k keyNames, t *line.Ticket, on func(int) bool, keep, forGood bool) {
	// A grant made to a token the waiter gave up (see rotate) is passed on
	// too, and so is one to its token unless its lease holds it (keep, for
	// good) or its next attempt takes it (keep).
	token, spare := t.Token, int64(0)
	switch {
	case o.owner != "", keep && !forGood:
		token = "" // an owner's waiter is only reserved the lock
	case keep:
		spare = 1
	}
	leave := func(ctx context.Context, on func(int) bool) []quorum.Reply[int64] {
		return quorum.Detached(ctx, c.q, o.timing(), func(ctx context.Context, i int, n *quorum.Node) (int64, error) {
			if !on(i) {
				return 0, nil
			}
			left := time.Duration(0)
			if forGood {
				left = o.ttl
			}
			return n.Driver.MutexLeave(ctx, driver.MutexLeaveRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Tickets: k.tickets, Ticket: t.Key, Token: token, Reserve: o.reserve(), Idle: o.idle, Left: left, Stem: t.Stem, Keep: spare})
		})
	}
	replies := leave(ctx, on)
	if forGood { // else the waiter may join this queue again with the ticket
		quorum.Retry(ctx, c.q, o.ttl, replies, leave)
	}
}

// grantedLease is a Mutex waiter's lease from grants (an owner's waiter
// is reserved the lock, never granted it). The ticket leaves the queues of
// the nodes that did not grant it.
func (m *Mutex) grantedLease(ctx context.Context, t *line.Ticket) *Lease {
	if m.opts.owner != "" {
		return nil
	}
	h := m.hold(t.Token)
	h.markTicket(t.Key)
	l, granted := grantedLease(ctx, m.c, &m.opts, m.names, t, &h)
	if l != nil && len(m.c.q.Nodes) > 1 {
		m.leaveBehind(ctx, l, t, func(i int) bool { return !granted[i] })
	}
	return l
}

// MutexState is what the servers hold for a Mutex name at one moment: who
// holds it, how long they still do, and how many wait. Mutex.State
// returns it. The summary fields are what a majority of nodes agree on;
// PerNode has each node's own view.
type MutexState struct {
	// Name is the lock's name.
	Name string
	// Locked reports that a majority of nodes agree on one holder, Holder.
	// Redisson calls it isLocked.
	Locked bool
	// Holder is the holder a majority agrees on: the Lease.ID of the
	// lease that holds a plain lock, or the owner of a reentrant one
	// (WithOwner). Empty when no holder has a majority.
	Holder string
	// Metadata is what the holder's lease was taken with (WithMetadata):
	// MetadataOf(Holder) for a plain lock; empty for none, and for an
	// owner, whose leases each have their own.
	Metadata string
	// Owned reports that Holder is an owner.
	Owned bool
	// Holds is the hold count: how many of the owner's leases hold the
	// lock (Redisson's getHoldCount); 1 for a plain lock, 0 when free.
	Holds int
	// TTL is how long a majority still holds the lock without an
	// extension (Redisson's remainTimeToLive, bsm/redislock's TTL); 0 when
	// free.
	TTL time.Duration
	// Token is the fencing token of the name's latest grant, as a majority
	// has it: while Locked, the Token of Holder's lease.
	Token uint64
	// Nodes is how many nodes Holder holds; 0 when free.
	Nodes int
	// Waiting is the length of the line as a majority of nodes has it. A
	// Mutex's line holds its Notify waiters (Poll waiters do not queue), a
	// FairMutex's every waiter.
	Waiting int
	// PerNode is each node's view, in the order of the Client's nodes.
	PerNode []MutexNodeState
}

// MutexNodeState is one node's view of a Mutex name.
type MutexNodeState struct {
	// Err is the node's error; the other fields are then zero.
	Err error
	// Holder is the Lease.ID of the lease that holds the lock on this
	// node, or the owner of a reentrant lock; empty when free (also while
	// the lock is reserved, for a moment, for an owner's waiter).
	Holder string
	Owned  bool
	Holds  int
	// TTL is the lock's remaining time on this node; 0 when free.
	TTL time.Duration
	// Token is this node's fencing counter: the token of its latest grant.
	Token uint64
	// Waiting is the number of waiters in this node's line. A Mutex's
	// counts its tickets, those of waiters whose tickets expired included
	// until a release drops them; a FairMutex's counts the waiters whose
	// place has not lapsed.
	Waiting int
	// Line is a FairMutex's waiters in line order, at most LineShown of
	// them; nil for a Mutex, whose waiters keep their details in keys of
	// their own, which no script may read on a Redis Cluster without
	// naming them beforehand.
	Line []Waiter
}

// Waiter is one waiter in a FairMutex's line.
type Waiter struct {
	// ID is the waiter's token: the Lease.ID it will hold.
	ID string
	// Lapses is how long the waiter keeps its place unless it attempts
	// again (waiters attempt again well before).
	Lapses time.Duration
}

// LineShown is the most waiters a FairMutex's State lists per node.
const LineShown = 100

// State reads who holds the lock, for how long, and how long its line
// is, from every node at once; it touches no lock and writes nothing.
// When too few nodes answered it returns, with the state of those that
// did, ErrNoQuorum (ErrServerError when nodes answered with an error); it
// returns ErrInvalid for bad options, ErrClosed after Close, and ctx's
// error when ctx ended first. It costs one round trip: a
// read-only script per node, O(1) for a plain lock, O(leases) for an
// owner's. It is for operators and dashboards: a holder may release or
// lose the lock the moment after, so decide nothing on it that the lock
// itself should decide.
func (m *Mutex) State(ctx context.Context) (MutexState, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return MutexState{Name: m.name}, err
	}
	return m.c.mutexState(ctx, &m.opts, m.name, m.keys)
}

func (c *Client) mutexState(ctx context.Context, o *options, name string, k keyNames) (MutexState, error) {
	replies := quorum.Fanout(ctx, c.q, o.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (MutexNodeState, error) {
		r, err := nd.Driver.MutexState(ctx, k.lock, k.fence, k.queue)
		return MutexNodeState{Holder: r.Holder, Owned: r.Owned, Holds: int(r.Holds), TTL: r.TTL, Token: uint64(max(r.Fence, 0)), Waiting: int(r.Waiting)}, err
	})
	return c.summarize(ctx, name, replies)
}

// summarize is the state a majority of nodes agree on.
func (c *Client) summarize(ctx context.Context, name string, replies []quorum.Reply[MutexNodeState]) (MutexState, error) {
	s := MutexState{Name: name, PerNode: make([]MutexNodeState, len(replies))}
	var answered []MutexNodeState
	for i, r := range replies {
		s.PerNode[i] = r.V
		if r.Err != nil {
			s.PerNode[i] = MutexNodeState{Err: c.q.NodeError(i, r.Err)}
			continue
		}
		if r.V.Holder == "" {
			s.PerNode[i].TTL = 0
		}
		s.PerNode[i].TTL = max(s.PerNode[i].TTL, 0)
		answered = append(answered, s.PerNode[i])
	}
	if err := quorum.NoQuorum(ctx, c.q, replies); err != nil {
		return s, err
	}
	// What a majority has is the quorum-th largest value among the nodes:
	// a lease's token is on the majority that granted it, a node that
	// granted after the round was decided may have drawn a larger one.
	token := func(n MutexNodeState) uint64 { return n.Token }
	s.Token = quorum.MajorityHas(c.q.Quorum, answered, token)
	s.Waiting = quorum.MajorityHas(c.q.Quorum, answered, func(n MutexNodeState) int { return n.Waiting })
	holder, ok := quorum.MajorityNames(c.q.Quorum, answered, func(n MutexNodeState) string { return n.Holder })
	if !ok {
		return s, nil
	}
	var holders []MutexNodeState
	for _, n := range answered {
		if n.Holder == holder {
			holders = append(holders, n)
		}
	}
	s.Locked, s.Holder, s.Owned, s.Nodes = true, holder, holders[0].Owned, len(holders)
	if !s.Owned {
		s.Metadata = MetadataOf(holder)
	}
	s.Token = quorum.MajorityHas(c.q.Quorum, holders, token)
	s.TTL = quorum.MajorityHas(c.q.Quorum, holders, func(n MutexNodeState) time.Duration { return n.TTL })
	s.Holds = quorum.MajorityHas(c.q.Quorum, holders, func(n MutexNodeState) int { return n.Holds })
	return s, nil
}

// ForceUnlock frees the lock whoever holds it, a plain lease or an
// owner's leases, on every node at once, and hands it on to the oldest
// waiter as a release does. It is an operator's tool, for a holder that
// is stuck, and it breaks mutual exclusion by design: the former holder
// may go on working on the resource until its next Extend or Unlock,
// which returns ErrLost saying that the lease was force-released (with
// WithAutoExtend, its watchdog closes Done within a third of its TTL,
// Err saying so too). Only fencing tokens (Lease.Token), checked
// by the resource, keep its late writes out: the next holder's is
// higher. It returns nil when a majority of nodes answered, the name then
// free there or handed on (a name that was free is no error); else, as
// State does, ErrNoQuorum with the nodes' errors (ErrServerError when they
// answered with an error), or ctx's error.
func (m *Mutex) ForceUnlock(ctx context.Context) error {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return err
	}
	k, o := m.keys, &m.opts
	return force(ctx, m.c, o, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		return nd.Driver.MutexForce(ctx, driver.MutexForceRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Forced: forcedKey(k.lock), Tickets: k.tickets, Reserve: o.reserve(), Idle: o.idle})
	})
}

// ForceLock takes the lock from whoever holds it, on every node at once,
// with a fencing token higher than the former holder's, and returns its
// lease; the line of waiters stays as it is, and the lease's Unlock hands
// the lock on to it as any release does. It is an operator's tool, as
// ForceUnlock is, and breaks mutual exclusion by design: the former
// holder may go on working until its next Extend or Unlock, which returns
// ErrLost saying that it was force-released (with WithAutoExtend, its
// watchdog closes Done, Err saying so), and only fencing tokens, checked
// by the resource, keep its late writes out.
//
// It reads each node's holder, as State does, then asks each node to swap
// that holder, and only that one, for the new lease: a copy or retry of
// the request that lands once the name changed hands takes nothing, and
// one that finds this lease writes nothing. A copy that lands once the
// name is free again, as it was when read, takes it as a late TryLock
// does: for at most the TTL, as a lease that nobody has. When the holder
// changes between the read and the swap on too many nodes, it reads
// again, a few times, then returns ErrNotAcquired saying so. It returns
// ErrInvalid, writing nothing, for a Mutex with an owner (WithOwner) or a
// name that an owner holds (ForceUnlock it first); else the errors of
// TryLock. It costs two round trips, and a third to make the token
// durable where the nodes drew different ones.
func (m *Mutex) ForceLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	if m.opts.owner != "" {
		return nil, invalid("ForceLock takes a plain lock: use a Mutex without WithOwner")
	}
	o, k := &m.opts, m.keys
	h := m.hold(rand.Text() + m.opts.metaTag()) // one token for every try: a late request of an earlier try is then its own
	h.mark = line.RandomKey(k.noTicket)
	durable := func(ctx context.Context, replies []quorum.Reply[grant], _ func(int) bool, fence int64) bool {
		return h.makeFenceDurable(ctx, m.c, o, replies, fence)
	}
	for range forceLockTries {
		seen := quorum.Fanout(ctx, m.c.q, o.timing(), func(ctx context.Context, _ int, n *quorum.Node) (driver.MutexStateReply, error) {
			return n.Driver.MutexState(ctx, k.lock, k.fence, k.queue)
		})
		if err := quorum.NoQuorum(ctx, m.c.q, seen); err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(seen, func(r quorum.Reply[driver.MutexStateReply]) bool { return r.Err == nil && r.V.Owned }); i >= 0 {
			return nil, invalid("ForceLock takes a plain lock, and owner %q holds %q: ForceUnlock it first", seen[i].V.Holder, m.name)
		}
		swap := func(ctx context.Context, i int, n *quorum.Node) (grant, error) {
			if seen[i].Err != nil {
				return grant{}, seen[i].Err
			}
			fence, err := n.Driver.MutexForceLock(ctx, driver.MutexForceLockRequest{Lock: k.lock, Fence: k.fence, Forced: forcedKey(k.lock), Token: h.holder, Holder: seen[i].V.Holder, TTL: o.ttl, Idle: o.idle})
			return grant{Acquired: err == nil && fence > 0, Fence: fence}, err
		}
		l, _, err := grantRound(ctx, m.c, o, m.names, &h, &h, false, swap, durable)
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
	}
	return nil, errHolderKeptChanging
}

// forceLockTries is how many times ForceLock reads the holders and swaps.
const forceLockTries = 3

// errHolderKeptChanging is ForceLock's ErrNotAcquired once every try
// found another holder than it read on too many nodes.
var errHolderKeptChanging = fmt.Errorf("%w: the holder kept changing between ForceLock's read and its swap; call ForceLock again", ErrNotAcquired)

// Resume returns a Lease for the hold of this lock whose Lease.ID is id,
// taken by this or another process: a worker that hands its job on hands
// the ID on, and the next one extends or releases the lock with it. It
// checks on the servers that a majority of nodes hold the name with id
// now, and writes nothing. The Lease's Until is the remaining time that a
// majority still have (as Lease.TTL reads it), less the allowance for
// clock drift of this Mutex's TTL; its Extend, Unlock, Valid, TTL and Done
// work as on the original, which keeps working too: an Unlock through
// either releases the lock, and the other learns it at its next Extend
// or check (or at Until). Its Token is the fencing token of the hold,
// read from the name's fencing counter, or 0 when fewer than a majority
// of the holding nodes still keep it there (the counter expires
// WithIdleExpiry after its last draw, also while a lease holds the name).
//
// What holds the name with id may be a late copy of the original's
// acquisition, landed after its Unlock or ForceUnlock (see SAFETY.md):
// Resume then returns a lease for that hold, exclusive as any, whose
// Token is the copy's, higher than the original's; the original lease
// stays ended.
//
// It returns ErrNotHeld when id does not hold the name on a majority
// (released, expired, or another holder's now), ErrNoQuorum when too few
// nodes answered to tell, and ErrInvalid, writing nothing, when id is not
// a Mutex lease's ID or the Mutex is reentrant (WithOwner: an owner's
// leases are resumed by taking the lock again as that owner). It costs a
// read-only script per node.
func (m *Mutex) Resume(ctx context.Context, id string) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	if m.opts.owner != "" {
		return nil, invalid("Resume takes a plain lock's lease ID, and %q is reentrant (WithOwner(%q)): lock it again as that owner instead", m.name, m.opts.owner)
	}
	if !isLeaseID(id) {
		return nil, invalid("%q is not the ID of a Mutex lease: pass the Lease.ID of one of the leases of %q", id, m.name)
	}
	type holding struct {
		left  time.Duration
		fence uint64
	}
	k := m.keys
	until, replies, held := quorum.HeldUntil(ctx, m.c.q, m.opts.timing(), func(ctx context.Context, n *quorum.Node) (holding, error) {
		r, err := n.Driver.MutexState(ctx, k.lock, k.fence, k.queue)
		switch {
		case err != nil || r.Owned || r.Holder != id:
			return holding{}, err
		case r.TTL < 0: // made persistent: it holds for as long as Until allows
			r.TTL = math.MaxInt32 * time.Millisecond
		}
		return holding{left: r.TTL, fence: uint64(max(r.Fence, 0))}, nil
	}, func(h holding) time.Duration { return h.left })
	if until.IsZero() {
		if err := quorum.NoQuorum(ctx, m.c.q, replies); err != nil {
			return nil, err
		}
		if err := quorum.Unconfirmed(m.c.q, held); err != nil {
			return nil, err
		}
		return nil, ErrNotHeld
	}
	if !time.Now().Before(until) {
		return nil, ErrNotHeld
	}
	// The lease's round left its token on a majority of the nodes that
	// hold it, and no draw moves a counter while the name is held there.
	fence, _ := quorum.MajorityNames(m.c.q.Quorum, replies, func(r quorum.Reply[holding]) uint64 {
		if r.Err != nil || r.V.left <= 0 {
			return 0
		}
		return r.V.fence
	})
	h := m.hold(id)
	l := newLease(m.c, m.names, m.opts, &h, fence)
	l.start(until)
	return l, nil
}

// isLeaseID reports whether id has the form of a plain Mutex lease's ID: a
// token from crypto/rand.Text and its metadata tag (WithMetadata), if
// any, followed, for a waiter's under Notify, by the number of its token
// (see line.Ticket.Rotate).
func isLeaseID(id string) bool {
	const most = 20 // digits: more than a waiter ever rotates
	_, seq, ok := tokenPart(id)
	return ok && len(seq) <= most && strings.Trim(seq, "0123456789") == ""
}

// ExtendOrRetake extends a plain Mutex's lease as Extend does, and when the
// lease has been lost (its keys expired or were deleted, its validity ran
// out) while its name is free, takes the name again as TryLock does. It
// returns the lease that holds the name: l itself when l was extended, or
// a new Lease when the name was retaken. A retake is a new acquisition: the
// new Lease has a new ID and a higher Token, and l stays lost, so compare
// them:
//
//	next, err := lease.ExtendOrRetake(ctx, ttl)
//	if err == nil && next != lease {
//		// Retaken: another holder may have come and gone between the two,
//		// so check what the lock protects, and send next.Token() from now on.
//	}
//
// The retake releases what is left of the lost hold first (the nodes
// where its keys remain), as Unlock would, and runs as a TryLock of the
// Mutex with a TTL of ttl and the lease's other options. When another
// holder has the name, it returns ErrLost, as Extend does; ErrNoQuorum,
// ErrUnavailable and ErrReplicasBehind as TryLock does, and when l was
// not lost, Extend's errors (after ErrNoQuorum l stays valid until
// Until). It returns ErrNotHeld after Unlock, and ErrInvalid, writing
// nothing, for a lease that is not a plain Mutex's (a reentrant one's,
// WithOwner, a FairMutex's, an RWMutex's, a Semaphore's or a MultiLock's).
// The watchdog of WithAutoExtend calls Extend, never this: a lease it
// keeps ends when lost.
func (l *Lease) ExtendOrRetake(ctx context.Context, ttl time.Duration) (*Lease, error) {
	if l == nil {
		return nil, ErrNotHeld
	}
	h, ok := l.hold.(*mutexHold)
	if !ok || h.owned() {
		return nil, invalid("ExtendOrRetake takes a plain Mutex's lease, and the lease of %q is not one; use Extend", l.name)
	}
	lost := l.Extend(ctx, ttl)
	switch {
	case lost == nil:
		return l, nil
	case !errors.Is(lost, ErrLost):
		return nil, lost
	}
	// Unlock of a lost lease still deletes its keys where they remain,
	// which would refuse the retake there; after an Unlock by the caller
	// it returns ErrNotHeld, and nothing is retaken.
	if err := l.Unlock(ctx); !errors.Is(err, ErrLost) {
		return nil, err
	}
	m := &Mutex{c: l.c, name: l.name, names: l.names, opts: l.opts, keys: h.keys}
	m.opts.ttl = ttl
	next, err := m.TryLock(ctx)
	if errors.Is(err, ErrNotAcquired) {
		return nil, lost
	}
	return next, err
}

func (h mutexHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	if h.owned() {
		return n.Driver.OwnedTTL(ctx, h.keys.lock, h.holder)
	}
	return lockLeft(ctx, n, h.keys.lock, h.holder, h.forcedFlag)
}

func (h mutexHold) lockKeys() []string { return []string{h.keys.lock} }
