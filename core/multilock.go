package core

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// MultiLock holds several Mutex names as one: an acquisition takes all of
// them or none. Its names are the Mutex names themselves (the same keys),
// so a MultiLock and a Mutex over a shared name exclude each other. A
// MultiLock is safe for concurrent use.
//
// Each attempt takes the names one by one in sorted order, on every node at
// once, and stops on a node at the first name held by someone else; the
// names it took are released before it waits. Two MultiLocks over
// overlapping names thus meet first at their lowest shared name, and the one
// that takes it goes on while the other takes nothing more: neither can hold
// a name the other needs while waiting for one the other holds. A node
// counts toward the quorum only when it granted every name. Under Notify a
// waiter queues at the name it stopped at, as a Mutex waiter does, and is
// served in turn there.
//
// Where a node is one server (see driver.SingleServer), a plain
// MultiLock's attempt and release are one script over all names instead:
// it takes every name or none, and stops at the same name. A release there
// grants all the names to a waiter for the same names, which then needs
// no request (see multilock_queue.go). On a Redis Cluster the names hash
// to different slots, which one script cannot touch, so there, and for a
// MultiLock with an owner, an attempt costs one round trip per name.
type MultiLock struct {
	c     *Client
	names []string // sorted
	opts  options
	keys  []keyNames // by names
}

// MultiLock returns the lock over names, which it copies and sorts. Options
// given here override the Client's. Bad names (none, more than
// MaxMultiLockNames, an empty one, one given twice) and bad options are
// reported by its methods with ErrInvalid, before anything is written.
func (c *Client) MultiLock(names []string, opts ...Option) *MultiLock {
	o := c.options("MultiLock", opts)
	sorted := slices.Sorted(slices.Values(names))
	m := &MultiLock{c: c, names: sorted, opts: o}
	for _, n := range sorted {
		m.keys = append(m.keys, c.keys(o, n))
	}
	return m
}

// Names returns the lock's names in the order they are acquired (sorted).
func (m *MultiLock) Names() []string { return slices.Clone(m.names) }

// TryLock makes one attempt. It returns ErrNotAcquired when another owner
// holds any of the names (and then holds none of them itself), and
// ErrNoQuorum when too few nodes answered.
//
// The lease's Token is the highest of the names' fencing tokens, made
// durable on every name: it exceeds every token any primitive got before
// for any of the names, and every later token for any of them exceeds it
// (see the package documentation; WithFencing(false) drops this in the
// same way as for a Mutex).
func (m *MultiLock) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	l, _, _, err := m.attempt(ctx, "", nil)
	return l, err
}

// Lock waits until every name is acquired, ctx ends (its error is
// returned), or WithMaxAttempts attempts failed (ErrNotAcquired). It
// returns at once with ErrNoQuorum when a majority of nodes cannot be
// reached. While it waits it holds none of the names, but for the one it
// waits for, which under Notify a release may grant it just before its next
// attempt (see multilock_queue.go).
func (m *MultiLock) Lock(ctx context.Context) (*Lease, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	if n, ok := m.c.queues(&m.opts); ok && m.opts.owner == "" {
		l, err := m.lockQueued(ctx, n)
		return stillWanted(ctx, l, err)
	}
	l, err := acquire(ctx, m.c, &m.opts, func(ctx context.Context) (*Lease, string, time.Duration, error) {
		// The key worth watching is the name the attempt stopped at,
		// which changes as holders come and go.
		l, miss, _, err := m.attempt(ctx, "", nil)
		return l, m.keys[miss.blocked].lock, miss.holderTTL, err
	})
	return stillWanted(ctx, l, err)
}

// check reports a closed client, a nil context, bad names or bad options.
func (m *MultiLock) check(ctx context.Context) error {
	switch {
	case len(m.names) == 0:
		return invalid("no names; give MultiLock at least one name")
	case len(m.names) > MaxMultiLockNames:
		return invalid("%d names, too many; give MultiLock at most MaxMultiLockNames (%d)", len(m.names), MaxMultiLockNames)
	}
	for i, n := range m.names {
		if err := m.c.check(ctx, n, &m.opts); err != nil {
			return err
		}
		if i > 0 && n == m.names[i-1] {
			return invalid("the name %q is given twice; give each name once", n)
		}
	}
	return nil
}

// attempt runs one Redlock round over all names with holder's token (a
// fresh one when ""). A queued waiter passes its tickets, by name, for the
// name it stops at to join that name's queue. On failure it returns the
// tally, which holds the name it stopped at and that holder's shortest
// remaining TTL, for the wait; and the nodes' replies.
func (m *MultiLock) attempt(ctx context.Context, holder string, tickets []*ticket) (*Lease, allTally, []reply[[]grant], error) {
	c := m.c
	rejoin := holder != "" && m.opts.owner == "" // a waiter's token, its attempts share
	if holder == "" || m.opts.owner != "" {
		holder = rand.Text() // an owner's attempt, never granted, has its own
	}
	h, o := m.hold(holder)
	// What the undo and the lease's release mark (see mutexHold.release):
	// an attempt that may land late is then refused.
	undo, lease := h, h
	switch {
	case tickets == nil:
		// Tickets of its own, which a release that finds nothing marks.
		suffix := rand.Text()
		for i := range h {
			h[i].mark = h[i].keys.noTicket + suffix
			h[i].own = h[i].mark
		}
	default:
		// A queued waiter's attempts share its token and tickets: its
		// lease's release marks them all, its undo none (it waits on with
		// them). One that does not join carries them all the same.
		undo, lease = slices.Clone(h), h.marking(tickets)
		if !tickets[0].join {
			for i, t := range tickets {
				h[i].mark = t.key
			}
		}
	}
	for i, t := range tickets { // one set of secrets: the attempt stores it at whichever name it queues
		if i == 0 {
			t.grants.expect()
		} else {
			t.grants.expectAs(&tickets[0].grants)
		}
	}
	// What each ticket asks is read now: a request that outlives the
	// round (see vote) must not read the tickets as the waiter's next
	// attempt changes them.
	asks := make([]asked, len(tickets))
	for j, t := range tickets {
		asks[j] = t.ask()
	}
	observe := func(i int, gs []grant, err error) {
		for j, t := range tickets {
			switch {
			case j < len(gs):
				t.grants.observe(i, gs[j], nil)
			case err != nil:
				t.grants.observe(i, grant{}, err)
			}
		}
	}
	var t allTally
	all := func(gs []grant) bool { return allGranted(gs, len(h)) }
	p := round[[]grant]{c: c, o: &o, names: m.names,
		ask: func(ctx context.Context, i int, n *node) ([]grant, error) {
			gs, err := h.acquire(ctx, n, o.ttl, tickets, asks)
			observe(i, gs, err)
			return gs, err
		},
		granted: all,
		count: func(replies []reply[[]grant]) outcome[[]grant] {
			t = tallyAll(replies, len(h))
			return outcome[[]grant]{wins: func(r reply[[]grant]) bool { return r.err == nil && all(r.v) }, fence: t.fence, hint: t.holderTTL}
		},
		hold:    func(outcome[[]grant]) hold { return lease },
		mayHold: func(r reply[[]grant]) bool { return r.err != nil || slices.ContainsFunc(r.v, acquired) },
		// Undo on a node what it may have granted: the names it granted,
		// and the one in flight when its call failed. Nothing more, so
		// that an owner's earlier holds of the other names stay.
		undo: func(ctx context.Context, n *node, r reply[[]grant]) (bool, error) {
			if undo.whole(n) {
				if r.err == nil && !all(r.v) {
					return true, nil // refused: it took none
				}
				return undo.release(ctx, n)
			}
			taken := len(r.v)
			if r.err == nil && taken > 0 && !r.v[taken-1].Acquired {
				taken--
			} else if r.err != nil {
				taken = min(taken+1, len(h))
			}
			return undo[:taken].release(ctx, n)
		},
		durable: func(ctx context.Context, replies []reply[[]grant], _ func(int) bool, fence int64) bool {
			return h.makeFenceDurable(ctx, c, &o, replies, fence)
		},
		voted: func(replies []reply[[]grant]) {
			for i, r := range replies {
				if stillOut(r) {
					observe(i, nil, r.err) // its grants may be undone yet
				}
			}
		},
	}
	r := p.play(ctx)
	if rejoin && retryable(r.err) && r.unsure {
		return nil, t, r.replies, errRejoin
	}
	return r.lease, t, r.replies, r.err
}

// hold is the lease's hold with holder, and the options the lease keeps
// for its extensions and release. A node may answer one request per name
// in turn: the node timeout bounds each of them, so the chain gets one per
// name.
func (m *MultiLock) hold(holder string) (multiHold, options) {
	o := m.opts
	o.nodeTimeout = time.Duration(len(m.names)) * o.perNodeTimeout()
	h := make(multiHold, len(m.keys))
	for i, k := range m.keys {
		h[i] = newMutexHold(k, holder, &o)
	}
	return h, o
}

// allTally sums up an attempt over several names.
type allTally struct {
	granted   int   // nodes that granted every name
	fence     int64 // the highest fencing counter any node granted for any name
	blocked   int   // the lowest name a node refused (0 when none did)
	holderTTL time.Duration
}

// tallyAll counts the nodes that granted all n names, and finds the name
// to wait for: the lowest one refused, with its holder's shortest TTL.
func tallyAll(replies []reply[[]grant], n int) allTally {
	t := allTally{blocked: n, holderTTL: -1}
	for _, r := range replies {
		for _, g := range r.v {
			t.fence = max(t.fence, g.Fence)
		}
		k := len(r.v)
		switch {
		case r.err != nil:
		case k == n && r.v[k-1].Acquired:
			t.granted++
		case k > 0 && !r.v[k-1].Acquired:
			g := r.v[k-1]
			if k-1 < t.blocked {
				t.blocked, t.holderTTL = k-1, -1
			}
			if k-1 == t.blocked && g.HolderTTL >= 0 && (t.holderTTL < 0 || g.HolderTTL < t.holderTTL) {
				t.holderTTL = g.HolderTTL
			}
		}
	}
	if t.blocked == n { // refused nowhere: a split vote or failed nodes
		t.blocked = 0
	}
	return t
}

// multiHold is a MultiLock lease's hold: one Mutex hold per name, in name
// order. A node holds the lease only while it holds every name. Where
// it takes one call per name, each call is retried on its own on a
// transient reply (see retryTransient): the chain, run again, would take
// the names before it again, and an owner's re-entry draws a token.
type multiHold []mutexHold

func (h multiHold) id() string { return h[0].holder }

// marking is h with the queued waiter's tickets marked by every release
// (see mutexHold.markTicket).
func (h multiHold) marking(tickets []*ticket) multiHold {
	h = slices.Clone(h)
	for j, t := range tickets {
		h[j].markTicket(t.key)
	}
	return h
}

// acquire takes the names on node n: in one script where it can (see
// whole), or one by one in order. The reply holds the grants in name
// order, up to and including the first refusal, or up to the failed call.
// A queued waiter passes its tickets, by name.
func (h multiHold) acquire(ctx context.Context, n *node, ttl time.Duration, tickets []*ticket, asks []asked) ([]grant, error) {
	if h.whole(n) {
		return h.acquireWhole(ctx, n, ttl, tickets, asks)
	}
	var gs []grant
	for j, mh := range h {
		var t *ticket
		if tickets != nil {
			t = tickets[j]
		}
		var a asked
		if j < len(asks) {
			a = asks[j]
		}
		r := retryTransient(ctx, n, func(ctx context.Context) (grant, error) { return mh.acquire(ctx, n, ttl, t, a) })
		g, err := r.v, r.err
		if err != nil {
			return gs, err
		}
		gs = append(gs, g)
		if !g.Acquired {
			break
		}
	}
	return gs, nil
}

// whole reports whether node n takes and releases all the names in one
// script: a plain lease, on a single server. No names (an undo of a
// chain refused at its first name) is not whole: there is nothing to do.
func (h multiHold) whole(n *node) bool { return len(h) > 0 && n.singleServer && !h[0].owned() }

// acquireWhole takes every name on n in one script (multi_acquire.lua),
// or none. Its reply has the shape of the per-name chain's: refused at
// name i, it lists i names as granted, though it holds none of them (the
// undo knows), and then the refusal. A queued waiter's tickets share one
// arrival, the first's, at whichever name it queues.
func (h multiHold) acquireWhole(ctx context.Context, n *node, ttl time.Duration, tickets []*ticket, asks []asked) ([]grant, error) {
	keys := make([]string, 0, 4*len(h))
	join, arrival, secret, stem, spend := int64(0), int64(0), "", "", int64(0)
	if h[0].own != "" {
		spend = 1
	}
	for j, mh := range h {
		ticket := mh.ticket()
		if j < len(asks) && asks[j].key != "" {
			a := asks[j]
			ticket, join, arrival, secret, stem = a.key, 1, asks[0].arrival, a.secrets[n.index], a.stem
		}
		keys = append(keys, mh.keys.lock, mh.keys.fence, mh.keys.queue, ticket)
	}
	r, err := n.d.MultiLockAcquire(ctx, driver.MultiLockAcquireRequest{Keys: keys, Token: h.id(), TTL: ttl, Join: join, Arrival: arrival, Reserve: h[0].reserve, Secret: secret, Idle: h[0].idle, Stem: stem, Spend: spend})
	switch {
	case err != nil:
		return nil, err
	case r.Acquired:
		gs := make([]grant, len(h))
		for j := range gs {
			gs[j] = grant{Acquired: true, Fence: r.Fence}
		}
		return gs, nil
	case r.At < 0 || r.At >= int64(len(h)):
		return nil, fmt.Errorf("%w: multi_acquire.lua refused name %d of %d", driver.ErrUnexpectedReply, r.At, len(h))
	}
	gs := make([]grant, r.At+1)
	for j := range gs {
		gs[j].Acquired = true
	}
	gs[r.At] = grant{HolderTTL: r.HolderTTL, First: r.First}
	if r.First && tickets != nil {
		tickets[r.At].first.Store(true)
	}
	return gs, nil
}

// extend extends every name, even after one failed, so that the node
// keeps what it still holds.
func (h multiHold) extend(ctx context.Context, n *node, ttl time.Duration) (bool, error) {
	all := true
	var errs []error
	for _, mh := range h {
		r := retryTransient(ctx, n, func(ctx context.Context) (bool, error) { return mh.extend(ctx, n, ttl) })
		all = all && r.v
		errs = append(errs, r.err)
	}
	return all, errors.Join(errs...)
}

// release releases every name, even after one failed, the highest first:
// MultiLocks over the same names wait at the lowest, and the one woken by
// its release then finds the others free.
func (h multiHold) release(ctx context.Context, n *node) (bool, error) {
	if h.whole(n) {
		keys := make([]string, 0, 4*len(h))
		for _, mh := range h {
			keys = append(keys, mh.keys.lock, mh.keys.fence, mh.keys.queue, mh.ticket())
		}
		mark := int64(marksNone) // as mutexHold.release marks, in one script
		switch {
		case h[0].always:
			mark = marksAll
		case h[0].mark != "":
			mark = marksMissed
		}
		v, err := n.d.MultiLockRelease(ctx, keys, h.id(), h[0].reserve, h[0].idle, h[0].ttl, mark)
		return v == int64(len(h)), err
	}
	all := true
	var errs []error
	for _, mh := range slices.Backward(h) {
		r := retryTransient(ctx, n, func(ctx context.Context) (bool, error) { return mh.release(ctx, n) })
		all = all && r.v
		errs = append(errs, r.err)
	}
	return all, errors.Join(errs...)
}

// makeFenceDurable raises every name's fencing counter to the lease's
// token on the nodes that granted all names, where it is lower, while they
// still hold the name; it succeeds when a majority did. Raising every name
// to the highest of their tokens is what makes later tokens of any of the
// names exceed this lease's (see the package documentation). On one node
// it is still needed for the names whose counters were lower. A node's
// names are raised at once: they are held, so their order does not matter.
func (h multiHold) makeFenceDurable(ctx context.Context, c *Client, o *options, grants []reply[[]grant], fence int64) bool {
	replies := fanout(ctx, c, o, func(ctx context.Context, i int, n *node) (bool, error) {
		if g := grants[i]; g.err != nil || !allGranted(g.v, len(h)) {
			return false, nil
		}
		raised, errs := make([]bool, len(h)), make([]error, len(h))
		var wg sync.WaitGroup
		for j, mh := range h {
			if grants[i].v[j].Fence >= fence {
				raised[j] = true // drawn at the grant, while the name was held here
				continue
			}
			wg.Go(func() {
				v, err := n.d.FenceRaise(ctx, mh.keys.lock, mh.keys.fence, mh.holder, fence, mh.idle)
				raised[j], errs[j] = v == 1, err
			})
		}
		wg.Wait()
		return !slices.Contains(raised, false), errors.Join(errs...)
	})
	return held(replies) >= c.quorum
}
