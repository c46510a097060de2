package core

import (
	"cmp"
	"context"
	"crypto/rand"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// Mutex is a distributed lock. Each successful Lock or TryLock returns a
// Lease, the handle of that one acquisition. A Mutex is safe for
// concurrent use and cheap: make one per name as needed.
type Mutex struct {
	c     *Client
	name  string
	names []string // name alone, as a lease takes it
	opts  options
	keys  keyNames
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// TryLock makes one attempt. It returns ErrNotAcquired when another owner
// holds the lock and ErrNoQuorum when too few nodes answered.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	l, _, err := m.attempt(ctx, nil)
	return l, err
}

// Lock waits until the lock is acquired, ctx ends (its error is returned),
// or WithMaxAttempts attempts failed (ErrNotAcquired). It returns at once
// with ErrNoQuorum when a majority of nodes cannot be reached.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	var (
		l   *Lease
		err error
	)
	if n, ok := m.c.queues(&m.opts); ok {
		l, err = m.lockQueued(ctx, n)
	} else {
		l, err = acquire(ctx, m.c, &m.opts, func(ctx context.Context) (*Lease, string, time.Duration, error) {
			l, holderTTL, err := m.attempt(ctx, nil)
			return l, m.keys.lock, holderTTL, err
		})
	}
	return stillWanted(ctx, l, err)
}

// acquire is the wait loop every blocking primitive shares, but the queued
// waiters of Notify (see line): attempt, and until done watch the key the
// attempt was refused at and wait, at most until the holder's TTL ends. A
// watch subscribes on its first wait and has the caller attempt again at
// once (see waiter.watch), so no release between an attempt and a wait
// is missed. One watch at a time: a watch left on a key no longer waited
// for (a MultiLock's attempt may stop at another name each time) would
// absorb that key's wake-ups.
func acquire[L any](ctx context.Context, c *Client, o *options, attempt func(context.Context) (l L, key string, holderTTL time.Duration, err error)) (L, error) {
	var (
		zero     L
		w        watch
		watching string
	)
	defer func() {
		if w != nil {
			w.stop()
		}
	}()
	for n := 0; ; n++ {
		l, key, holderTTL, err := attempt(ctx)
		if !retryable(err) {
			return l, err
		}
		if o.maxAttempts > 0 && n+1 >= o.maxAttempts {
			return zero, err
		}
		if w == nil || key != watching {
			if w != nil {
				w.stop()
			}
			if w, err = c.wait.watch(ctx, o, key); err != nil {
				w = nil
				return zero, err
			}
			watching = key
		}
		if err := w.wait(ctx, n, holderTTL); err != nil {
			return zero, err
		}
	}
}

// attempt runs one Redlock round (see round): on failure it returns the
// holder's shortest remaining TTL as a hint. A queued waiter passes its
// ticket (see notify_queue.go); nil stands for an attempt that does not
// queue.
func (m *Mutex) attempt(ctx context.Context, t *ticket) (*Lease, time.Duration, error) {
	c, o := m.c, &m.opts
	// A queued waiter keeps its token, which its grants carry. An owner's
	// attempt takes a fresh one, as it is never granted: its undo then
	// drops its own lease and none of the owner's others.
	holder := rand.Text()
	if t != nil && o.owner == "" {
		holder = t.token
	}
	h := m.hold(holder)
	if t != nil {
		t.sent = time.Now()
		t.grants.expect()
	}
	a := t.ask()
	switch {
	case t == nil || !t.join:
		// An attempt that does not queue has a ticket of its own, which
		// it marks as it lands, and a release of its token that finds
		// nothing marks too: the attempt, landing late (after its undo,
		// or its lease's release, on a stalled node) or twice, is then
		// refused.
		h.mark = m.keys.noTicket + rand.Text()
		h.own = h.mark
	case a.key != "":
		h.markTicket(a.key)
		if h.owned() {
			// Each of an owner's attempts has a lease token of its own.
			h.own = m.keys.noTicket + rand.Text()
		}
	}
	var won atomic.Bool  // an undo of a late answer then gives the node up
	var kept atomic.Bool // an undo left the lock with the waiter
	p := round[grant]{c: c, o: o, names: m.names,
		ask: func(ctx context.Context, i int, n *node) (grant, error) {
			g, err := h.acquire(ctx, n, o.ttl, t, a)
			if t != nil {
				t.grants.observe(i, g, err)
			}
			return g, err
		},
		granted: acquired, count: countGrants, hold: func(outcome[grant]) hold { return h }, mayHold: mayHoldGrant,
		undo: func(ctx context.Context, n *node, r reply[grant]) (bool, error) {
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
			if r.err == nil && r.v.Granted || t.grants.wasGranted(n.index) {
				ahead = a.arrival
			}
			k := h.keys
			v, err := n.d.ReleaseWake(ctx, driver.ReleaseWakeRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Ahead: ahead})
			if v == 2 {
				kept.Store(true)
			}
			return v >= 1, err
		},
		durable: func(ctx context.Context, replies []reply[grant], _ func(int) bool, fence int64) bool {
			return h.makeFenceDurable(ctx, c, o, replies, fence)
		},
	}
	if t != nil {
		p.voted = func(replies []reply[grant]) {
			for i, r := range replies {
				if stillOut(r) {
					t.grants.observe(i, grant{}, r.err) // its grants may be undone yet
				}
			}
		}
		p.won = func(ctx context.Context, l *Lease, replies []reply[grant], wins func(int) bool) {
			won.Store(true)
			if t.joined && len(c.nodes) > 1 {
				m.leaveBehind(ctx, l, t, func(i int) bool { return !wins(i) })
			}
		}
	}
	r := p.play(ctx)
	if t != nil && r.err != nil && r.unsure {
		t.rotate()
	}
	if r.err != nil && kept.Load() {
		// It keeps nodes that a later waiter may need, which may not see
		// it in line there yet: it tries again after its backoff, not at
		// the holder's TTL, or the two could wait each other out.
		r.hint = 0
	}
	return r.lease, r.hint, r.err
}

// grant is one node's answer to an acquisition.
type grant struct {
	Acquired  bool
	Fence     int64
	HolderTTL time.Duration
	First     bool // a queued waiter is at the head of the queue
	Granted   bool // the lock held the waiter's token already, as a release grants it
}

// countGrants reads the answers of a round whose nodes grant or refuse:
// the lease's token is the highest the grants drew, and the hint the
// shortest remaining TTL among the nodes held by someone else.
func countGrants(replies []reply[grant]) outcome[grant] {
	out := outcome[grant]{wins: func(r reply[grant]) bool { return r.err == nil && r.v.Acquired }, hint: -1}
	for _, r := range replies {
		switch {
		case r.err != nil:
		case r.v.Acquired:
			out.fence = max(out.fence, r.v.Fence)
		case r.v.HolderTTL >= 0 && (out.hint < 0 || r.v.HolderTTL < out.hint):
			out.hint = r.v.HolderTTL
		}
	}
	return out
}

func acquired(g grant) bool { return g.Acquired }

// mayHoldGrant: a node that granted holds the attempt, and one whose
// call failed may.
func mayHoldGrant(r reply[grant]) bool { return r.err != nil || r.v.Acquired }

// hold is the hold of this Mutex's lease with holder, its random token
// (or its queued waiter's).
func (m *Mutex) hold(holder string) mutexHold { return newMutexHold(m.keys, holder, &m.opts) }

// newMutexHold is the hold of the lease holder on the lock keys k, as o
// makes it (reentrant for an owner; releasing through the queue under
// Notify).
func newMutexHold(k keyNames, holder string, o *options) mutexHold {
	return mutexHold{keys: k, holder: holder, owner: o.owner, wake: o.wait == Notify, reserve: o.reserve(), idle: o.idle, ttl: o.ttl, timeout: o.perNodeTimeout()}
}

// mutexHold is a Mutex lease's hold: its random token in a string key, or,
// for a reentrant lock, a field of its own in the owner's hash.
type mutexHold struct {
	keys    keyNames
	holder  string // the lease's random token
	owner   string // the reentrant lock's owner; "" for a plain lock
	wake    bool   // release wakes the next queued waiter (Notify)
	reserve time.Duration
	idle    time.Duration // how long the fencing counter outlives its last draw
	mark    string        // the ticket of its attempt, which a release that finds nothing marks; "" for none
	own     string        // the attempt's own mark, which it sets as it lands (see lib/left.lua); "" for a plain waiter's, which shares its ticket
	always  bool          // a release marks it also when it finds the lock: a queued waiter's ticket
	ttl     time.Duration // how long such a mark stays
	timeout time.Duration // the node timeout
}

func (h mutexHold) owned() bool { return h.owner != "" }

// ticket is the ticket key its attempt carries when it does not queue.
func (h mutexHold) ticket() string { return cmp.Or(h.mark, h.keys.noTicket) }

func (h mutexHold) id() string { return h.holder }

// asked is what an attempt of a queued waiter asks every node to store in
// its ticket, read from the ticket before the attempt's requests: a
// request that outlives its round (see vote) must not read the ticket as
// the waiter's next attempt changes it.
type asked struct {
	key     string // "" for an attempt that does not queue
	arrival int64
	stem    string   // of the tokens it takes grants over from (see ticket.rotate)
	secrets []string // by node
}

// ask is what t's attempt about to start asks; nil and a ticket that does
// not join ask nothing.
func (t *ticket) ask() asked {
	if t == nil || !t.join {
		return asked{}
	}
	a := asked{key: t.key, arrival: t.arrival, stem: t.stem, secrets: make([]string, len(t.grants.heard))}
	for i := range a.secrets {
		a.secrets[i] = t.grants.secret(i)
	}
	return a
}

// acquire takes the lock on one node, plainly or for the owner. A queued
// waiter passes its ticket (see notify_queue.go) and what its attempt
// asks; nil does not queue.
func (h mutexHold) acquire(ctx context.Context, n *node, ttl time.Duration, t *ticket, a asked) (grant, error) {
	k := h.keys
	ticket, join, arrival, secret, stem, spend := h.ticket(), int64(0), int64(0), "", "", int64(0)
	switch {
	case a.key != "":
		ticket, join, arrival, secret, stem = a.key, 1, a.arrival, a.secrets[n.index], a.stem
	case h.own != "":
		spend = 1
	}
	var g grant
	var err error
	if h.owned() {
		r, e := n.d.MutexAcquireOwned(ctx, driver.MutexAcquireOwnedRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Ticket: ticket, Mark: cmp.Or(h.own, ticket), Owner: h.owner, Lease: h.holder, TTL: ttl, Join: join, Arrival: arrival, Idle: h.idle, Secret: secret})
		g, err = grant{Acquired: r.Acquired, Fence: r.Fence, HolderTTL: r.HolderTTL, First: r.First}, e
	} else {
		r, e := n.d.MutexAcquire(ctx, driver.MutexAcquireRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Ticket: ticket, Token: h.holder, TTL: ttl, Join: join, Arrival: arrival, Secret: secret, Idle: h.idle, Stem: stem, Spend: spend})
		g, err = grant(r), e
	}
	if g.First && t != nil {
		t.first.Store(true)
	}
	return g, err
}

func (h mutexHold) extend(ctx context.Context, n *node, ttl time.Duration) (bool, error) {
	if h.owned() {
		v, err := n.d.ExtendOwned(ctx, h.keys.lock, cmp.Or(h.own, h.ticket()), h.holder, ttl)
		return v == 1, err
	}
	v, err := n.d.Extend(ctx, h.keys.lock, h.ticket(), h.holder, ttl)
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
func (h mutexHold) release(ctx context.Context, n *node) (bool, error) {
	k := h.keys
	if h.owned() {
		left, err := n.d.ReleaseOwned(ctx, driver.ReleaseOwnedRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Ticket: h.ticket(), Mark: cmp.Or(h.own, h.ticket()), Lease: h.holder, Reserve: h.reserve, Idle: h.idle, Left: h.ttl, Always: boolInt(h.always)})
		return left >= 0, err
	}
	if h.always {
		v, err := n.d.ReleaseOrMark(ctx, driver.ReleaseOrMarkRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Ticket: h.mark, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Left: h.ttl, Always: 1})
		return v == 1, err
	}
	released, err := h.releaseOnly(ctx, n)
	if released || h.mark == "" {
		return released, err
	}
	mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.timeout)
	defer cancel()
	_, err2 := n.d.ReleaseOrMark(mctx, driver.ReleaseOrMarkRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Ticket: h.mark, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Left: h.ttl, Always: 0})
	if err != nil {
		return false, err
	}
	return false, err2
}

func (h mutexHold) releaseOnly(ctx context.Context, n *node) (bool, error) {
	k := h.keys
	switch {
	case h.wake:
		// No native command also hands the lock on to the next waiter:
		// Notify pays for the hand-off with a script.
		v, err := n.d.ReleaseWake(ctx, driver.ReleaseWakeRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Token: h.holder, Reserve: h.reserve, Idle: h.idle, Ahead: 0})
		return v == 1, err
	}
	v, err := n.release(ctx, k.lock, h.holder)
	return v == 1, err
}

// makeFenceDurable raises the fencing counter to the chosen token on the
// nodes that granted, while they still hold the lock; it succeeds when a
// majority did. See the package documentation for why this makes tokens
// increase across holders. When every granting node drew the chosen token
// itself, their counters are there already and no round is needed: the
// usual case, as each acquisition draws on every node it reaches.
func (h mutexHold) makeFenceDurable(ctx context.Context, c *Client, o *options, grants []reply[grant], fence int64) bool {
	if !slices.ContainsFunc(grants, func(g reply[grant]) bool { return g.err == nil && g.v.Acquired && g.v.Fence != fence }) {
		return true // granted >= quorum was checked by the caller
	}
	replies := fanout(ctx, c, o, func(ctx context.Context, i int, n *node) (bool, error) {
		if g := grants[i]; g.err != nil || !g.v.Acquired {
			return false, nil
		}
		v, err := n.d.FenceRaise(ctx, h.keys.lock, h.keys.fence, h.holder, fence, h.idle)
		return v == 1, err
	})
	return held(replies) >= c.quorum
}
