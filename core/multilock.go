package core

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"

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
// waiter queues at the name it stopped at, as a Mutex waiter does (one
// with an owner as an owner's Mutex waiter does), and is served in turn
// there.
//
// Where a node is one server (see driver.SingleServer), a plain
// MultiLock's attempt and release are one script over all names instead:
// it takes every name or none, and stops at the same name. A release there
// grants all the names to a waiter for the same names, which then needs
// no request. On a Redis Cluster the names hash
// to different slots, which one script cannot touch, so there, and for a
// MultiLock with an owner, an attempt costs one round trip per name.
type MultiLock struct {
	c      *Client
	names  []string   // sorted
	leased leaseNames // names, as a lease takes them
	opts   options
	keys   []keyNames // by names
}

// MultiLock returns the lock over names, which it copies and sorts. Options
// given here override the Client's. Bad names (none, more than
// MaxMultiLockNames, an empty one, one given twice) and bad options are
// reported by its methods with ErrInvalid, before anything is written.
func (c *Client) MultiLock(names []string, opts ...Option) *MultiLock {
	o := c.options("MultiLock", opts)
	sorted := slices.Sorted(slices.Values(names))
	m := &MultiLock{c: c, names: sorted, leased: newLeaseNames(o, sorted...), opts: o}
	for _, n := range sorted {
		m.keys = append(m.keys, c.keys(o, n))
	}
	return m
}

// Names returns the lock's names in the order they are acquired (sorted).
func (m *MultiLock) Names() []string { return slices.Clone(m.names) }

// TryLock makes one attempt. It returns ErrNotAcquired when another owner
// holds any of the names (and then holds none of them itself), and
// ErrNoQuorum when too few nodes answered (ErrUnavailable or
// ErrReplicasBehind when they could not serve it yet).
//
// The lease's Token is the highest of the names' fencing tokens, made
// durable on every name: it exceeds every token any primitive got before
// for any of the names, and every later token for any of them exceeds it
// (see the package documentation; WithFencing(false) drops this in the same
// way as for a Mutex).
func (m *MultiLock) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	a := m.opts.acquiring(ctx, m.leased.String(), false)
	a.attempt()
	l, _, _, err := m.attempt(ctx, "", nil)
	return a.done(l, err)
}

// Lock waits until every name is acquired, ctx ends (its error is
// returned), or WithMaxAttempts attempts failed (ErrNotAcquired). It waits
// out nodes that fail (ErrNoQuorum, ErrUnavailable, ErrReplicasBehind):
// when ctx ends first, ctx's error is returned joined with the last of
// them. While it waits it holds none of the names, but for the one it waits
// for, which under Notify a release may grant it just before its next
// attempt.
func (m *MultiLock) Lock(ctx context.Context) (*Lease, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	a := m.opts.acquiring(ctx, m.leased.String(), true)
	if n, ok := m.c.queues(&m.opts); ok {
		l, err := m.lockQueued(ctx, n, a)
		return a.done(stillWanted(ctx, l, err))
	}
	l, err := line.Acquire(ctx, m.c.wait, m.opts.waiting(), func(ctx context.Context) (*Lease, string, time.Duration, error) {
		a.attempt()
		l, miss, _, err := m.attempt(ctx, "", nil)
		return l, m.keys[miss.blocked].lock, miss.holderTTL, err
	})
	return a.done(stillWanted(ctx, l, err))
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
func (m *MultiLock) attempt(ctx context.Context, holder string, tickets []*line.Ticket) (*Lease, allTally, []quorum.Reply[[]grant], error) {
	c := m.c
	rejoin := holder != "" && m.opts.owner == "" // a waiter's token, its attempts share
	if holder == "" || m.opts.owner != "" {
		holder = rand.Text() // an owner's attempt, never granted, has its own
	}
	h, o := m.hold(holder)
	// What the undo and the lease's release mark (see mutexHold.release):
	// an attempt that may land late is then refused.
	undo, lease := h, h
	owned := m.opts.owner != ""
	switch {
	case tickets == nil || owned && !tickets[0].Join:
		// Tickets of its own, which a release that finds nothing marks.
		suffix := rand.Text()
		for i := range h {
			h[i].mark = h[i].keys.noTicket + suffix
			h[i].own = h[i].mark
		}
	case owned:
		// An owner's queued waiter, as an owner's Mutex waiter (see
		// Mutex.attempt): each attempt has a mark of its own, which it
		// sets as it lands and its undo marks where it finds nothing;
		// its lease's release marks the tickets too.
		suffix := rand.Text()
		for i := range h {
			h[i].own = h[i].keys.noTicket + suffix
		}
		undo, lease = slices.Clone(h), h.marking(tickets)
	default:
		// A queued waiter's attempts share its token and tickets: its
		// lease's release marks them all, its undo none (it waits on with
		// them). One that does not join carries them all the same.
		undo, lease = slices.Clone(h), h.marking(tickets)
		if !tickets[0].Join {
			for i, t := range tickets {
				h[i].mark = t.Key
			}
		}
	}
	for i, t := range tickets { // one set of secrets: the attempt stores it at whichever name it queues
		if i == 0 {
			t.Grants.Expect()
		} else {
			t.Grants.ExpectAs(&tickets[0].Grants)
		}
	}
	// What each ticket asks is read now: a request that outlives the
	// round (see quorum.Vote) must not read the tickets as the waiter's next
	// attempt changes them.
	asks := make([]asked, len(tickets))
	for j, t := range tickets {
		asks[j] = ask(t)
	}
	observe := func(i int, gs []grant, err error) {
		for j, t := range tickets {
			switch {
			case j < len(gs):
				t.Grants.Observe(i, gs[j].Acquired, gs[j].Fence, nil)
			case err != nil:
				t.Grants.Observe(i, false, 0, err)
			}
		}
	}
	var t allTally
	all := func(gs []grant) bool { return allGranted(gs, len(h)) }
	p := quorum.Round[[]grant]{
		Ask: func(ctx context.Context, i int, n *quorum.Node) ([]grant, error) {
			gs, err := h.acquire(ctx, n, o.ttl, tickets, asks)
			observe(i, gs, err)
			return gs, err
		},
		Granted: all,
		Tally: func(replies []quorum.Reply[[]grant]) quorum.Outcome[[]grant] {
			t = tallyAll(replies, len(h))
			return quorum.Outcome[[]grant]{Wins: func(r quorum.Reply[[]grant]) bool { return r.Err == nil && all(r.V) }, Fence: t.fence, Hint: t.holderTTL}
		},
		MayHold: func(r quorum.Reply[[]grant]) bool { return r.Err != nil || slices.ContainsFunc(r.V, acquired) },
		// Undo on a node what it may have granted: the names it granted,
		// and the one in flight when its call failed. Nothing more, so
		// that an owner's earlier holds of the other names stay.
		Undo: func(ctx context.Context, n *quorum.Node, r quorum.Reply[[]grant]) (bool, error) {
			if undo.whole(n) {
				if r.Err == nil && !all(r.V) {
					return true, nil // refused: it took none
				}
				return undo.release(ctx, n)
			}
			taken := len(r.V)
			if r.Err == nil && taken > 0 && !r.V[taken-1].Acquired {
				taken--
			} else if r.Err != nil {
				taken = min(taken+1, len(h))
			}
			return undo[:taken].release(ctx, n)
		},
		Durable: func(ctx context.Context, replies []quorum.Reply[[]grant], _ func(int) bool, fence int64) bool {
			return h.makeFenceDurable(ctx, c, &o, replies, fence)
		},
		Voted: func(replies []quorum.Reply[[]grant]) {
			for i, r := range replies {
				if quorum.StillOut(r) {
					observe(i, nil, r.Err) // its grants may be undone yet
				}
			}
		},
	}
	l, r := play(ctx, c, &o, m.leased, p, func(quorum.Outcome[[]grant]) hold { return lease }, nil)
	if rejoin && quorum.Retryable(r.Err) && r.Unsure {
		return nil, t, r.Replies, rejoinError{r.Err}
	}
	return l, t, r.Replies, r.Err
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
func tallyAll(replies []quorum.Reply[[]grant], n int) allTally {
	t := allTally{blocked: n, holderTTL: -1}
	for _, r := range replies {
		for _, g := range r.V {
			t.fence = max(t.fence, g.Fence)
		}
		k := len(r.V)
		switch {
		case r.Err != nil:
		case k == n && r.V[k-1].Acquired:
			t.granted++
		case k > 0 && !r.V[k-1].Acquired:
			g := r.V[k-1]
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
func (h multiHold) marking(tickets []*line.Ticket) multiHold {
	h = slices.Clone(h)
	for j, t := range tickets {
		h[j].markTicket(t.Key)
	}
	return h
}

// acquire takes the names on node n: in one script where it can (see
// whole), or one by one in order. The reply holds the grants in name
// order, up to and including the first refusal, or up to the failed call.
// A queued waiter passes its tickets, by name.
func (h multiHold) acquire(ctx context.Context, n *quorum.Node, ttl time.Duration, tickets []*line.Ticket, asks []asked) ([]grant, error) {
	if h.whole(n) {
		return h.acquireWhole(ctx, n, ttl, tickets, asks)
	}
	var gs []grant
	for j, mh := range h {
		var t *line.Ticket
		if tickets != nil {
			t = tickets[j]
		}
		var a asked
		if j < len(asks) {
			a = asks[j]
		}
		r := quorum.RetryTransient(ctx, n, func(ctx context.Context) (grant, error) { return mh.acquire(ctx, n, ttl, t, a) })
		g, err := r.V, r.Err
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
func (h multiHold) whole(n *quorum.Node) bool { return len(h) > 0 && n.SingleServer && !h[0].owned() }

// acquireWhole takes every name on n in one script (multi_acquire.lua),
// or none. Its reply has the shape of the per-name chain's: refused at
// name i, it lists i names as granted, though it holds none of them (the
// undo knows), and then the refusal. A queued waiter's tickets share one
// arrival, the first's, at whichever name it queues.
func (h multiHold) acquireWhole(ctx context.Context, n *quorum.Node, ttl time.Duration, tickets []*line.Ticket, asks []asked) ([]grant, error) {
	keys, ids := make([]string, 0, 4*len(h)), make([]string, 0, len(h))
	join, arrival, secret, stem, spend := int64(0), int64(0), "", "", int64(0)
	if h[0].own != "" {
		spend = 1
	}
	for j, mh := range h {
		ticket := mh.ticket()
		if j < len(asks) && asks[j].key != "" {
			a := asks[j]
			ticket, join, arrival, secret, stem = a.key, 1, asks[0].arrival, a.secrets[n.Index], a.stem
		}
		keys = append(keys, mh.keys.lock, mh.keys.fence, mh.keys.queue, mh.keys.tickets)
		ids = append(ids, strings.TrimPrefix(ticket, mh.keys.noTicket))
	}
	r, err := n.Driver.MultiLockAcquire(ctx, driver.MultiLockAcquireRequest{Keys: keys, Token: h.id(), TTL: ttl, Join: join, Arrival: arrival, Reserve: h[0].reserve, Secret: secret, Idle: h[0].idle, Stem: stem, Spend: spend, Tickets: strings.Join(ids, " ")})
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
	gs[r.At] = grant{HolderTTL: r.HolderTTL}
	return gs, nil
}

// extend extends every name, even after one failed, so that the node
// keeps what it still holds.
func (h multiHold) extend(ctx context.Context, n *quorum.Node, ttl time.Duration) (bool, error) {
	all := true
	var errs []error
	for _, mh := range h {
		r := quorum.RetryTransient(ctx, n, func(ctx context.Context) (bool, error) { return mh.extend(ctx, n, ttl) })
		all = all && r.V
		errs = append(errs, r.Err)
	}
	return all, errors.Join(errs...)
}

// release releases every name, even after one failed, the highest first:
// MultiLocks over the same names wait at the lowest, and the one woken by
// its release then finds the others free.
func (h multiHold) release(ctx context.Context, n *quorum.Node) (bool, error) {
	if h.whole(n) {
		keys, ids := make([]string, 0, 4*len(h)), make([]string, 0, len(h))
		for _, mh := range h {
			keys = append(keys, mh.keys.lock, mh.keys.fence, mh.keys.queue, mh.keys.tickets)
			ids = append(ids, strings.TrimPrefix(mh.ticket(), mh.keys.noTicket))
		}
		mark := int64(marksNone) // as mutexHold.release marks, in one script
		switch {
		case h[0].always:
			mark = marksAll
		case h[0].mark != "":
			mark = marksMissed
		}
		v, err := n.Driver.MultiLockRelease(ctx, driver.MultiLockReleaseRequest{Keys: keys, Token: h.id(), Reserve: h[0].reserve, Idle: h[0].idle, Left: h[0].ttl, Mark: mark, Tickets: strings.Join(ids, " ")})
		return v == int64(len(h)), err
	}
	all := true
	var errs []error
	for _, mh := range slices.Backward(h) {
		r := quorum.RetryTransient(ctx, n, func(ctx context.Context) (bool, error) { return mh.release(ctx, n) })
		all = all && r.V
		errs = append(errs, r.Err)
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
func (h multiHold) makeFenceDurable(ctx context.Context, c *Client, o *options, grants []quorum.Reply[[]grant], fence int64) bool {
	replies := quorum.Fanout(ctx, c.q, o.timing(), func(ctx context.Context, i int, n *quorum.Node) (bool, error) {
		if g := grants[i]; g.Err != nil || !allGranted(g.V, len(h)) {
			return false, nil
		}
		raised, errs := make([]bool, len(h)), make([]error, len(h))
		var wg sync.WaitGroup
		for j, mh := range h {
			if grants[i].V[j].Fence >= fence {
				raised[j] = true // drawn at the grant, while the name was held here
				continue
			}
			wg.Go(func() {
				v, err := n.Driver.FenceRaise(ctx, mh.keys.lock, mh.keys.fence, mh.holder, fence, mh.idle)
				raised[j], errs[j] = v == 1, err
			})
		}
		wg.Wait()
		return !slices.Contains(raised, false), errors.Join(errs...)
	})
	return quorum.Held(replies) >= c.q.Quorum
}

// A MultiLock waits under Notify in the queue of the name it is blocked
// at, as a Mutex waiter does (see Mutex.lockQueued), with one ticket per
// name and one token for its attempts (a fresh one after an undo that
// failed on some node, see line.Ticket.Rotate): a release of that name grants
// it to the waiter, which its next attempt takes as its own, and nobody
// barges in. It waits in one queue at a time: once an attempt blocked at
// another name, it leaves the queues it joined before, handing on what a
// release granted it there, so that it never holds a name while it waits
// for another (which could deadlock MultiLocks over overlapping names).
// On a single server the attempt's script does that leaving itself, and a
// release of the same names may grant the waiter all of them at once
// (multi_release.lua): where every node does so, grants from a majority
// give the waiter its lease without a request, as they give a Mutex
// waiter. A waiter with an owner takes the names one by one on every
// node, and queues as an owner's Mutex waiter does (mutex_acquire_owned.lua):
// a release reserves the name for it, and its next attempt takes that name
// with the others; what it leaves or gives up is a reservation.

// lockQueued is Lock under Notify.
func (m *MultiLock) lockQueued(ctx context.Context, n *line.Notifier, a *acquiring) (*Lease, error) {
	o := &m.opts
	stem, wake := rand.Text(), make(chan struct{}, 1)
	tickets := make([]*line.Ticket, len(m.names))
	for i, name := range m.names {
		tickets[i] = n.NewTicket(key(*o, name, ""), stem, wake)
		defer n.DropTicket(tickets[i])
	}
	token := tickets[0].Token
	h, ho := m.hold(token)
	// Whether a node takes all names in one script does not depend on the
	// token, which a rotation changes while leaves of the last one run.
	first := h
	whole := func(i int) bool { return first.whole(m.c.q.Nodes[i]) }
	grantsAll := !slices.ContainsFunc(m.c.q.Nodes, func(nd *quorum.Node) bool { return !h.whole(nd) })
	joined := make([]bool, len(m.names)) // the names whose queues may hold the ticket
	// leave takes the tickets out of line on the nodes where on(i), but at
	// except; keep as in leaveQueue.
	leave := func(on func(int) bool, except int, keep, forGood bool) {
		for i, j := range joined {
			if j && i != except {
				leaveQueue(ctx, m.c, o, m.keys[i], tickets[i], on, keep, forGood)
				joined[i] = false
			}
		}
	}
	// won takes the ticket out of line on the nodes where on(i), once the
	// waiter holds its lease. A grant that reached it there late is part
	// of the lease now, which the lease's release gives back on every
	// node: handing it on now would wake a waiter that cannot win. Every
	// name's line: on a single server a release grants all the names at
	// once, maybe to a token the waiter gave up, which is passed on.
	leaveAll := func(ctx context.Context, on func(int) bool, keep bool) {
		for i := range m.names {
			leaveQueue(ctx, m.c, o, m.keys[i], tickets[i], on, keep, true)
		}
	}
	// wonOn is where won left: the lease's release leaves there again, for
	// good (left), as a Mutex lease's release marks its ticket
	// (release_or_mark.lua). Else a won leave that was lost until the
	// release, or lands after it, leaves the ticket in line there, and a
	// later release there grants the name to a lease that is over, which
	// holds it for its TTL.
	var wonOn func(int) bool
	won := func(on func(int) bool) {
		wonOn = on
		m.c.q.InBackground(func() { leaveAll(ctx, on, true) })
	}
	left := func(l *Lease) *Lease {
		if l != nil && wonOn != nil {
			on := wonOn
			l.left = func(ctx context.Context) { leaveAll(ctx, on, false) }
		}
		return l
	}
	// quit leaves every name's queue on the nodes where on(i), passing on
	// what a release granted the waiter there, also to a token it gave up
	// (a release on a single server grants every name), and, on a single
	// server, gives back what its own token or the last few it gave up
	// hold there. A give-back that failed is asked again in the
	// background, as a leave is (quorum.Retry).
	quit := func(on func(int) bool) {
		leaveAll(ctx, on, false)
		holds := []multiHold{h}
		for _, token := range tickets[0].Earlier {
			eh, _ := m.hold(token)
			holds = append(holds, eh)
		}
		giveBack := func(ctx context.Context, on func(int) bool) []quorum.Reply[bool] {
			return quorum.Detached(ctx, m.c.q, ho.timing(), func(ctx context.Context, i int, nd *quorum.Node) (bool, error) {
				if !on(i) || !whole(i) {
					return false, nil
				}
				var errs []error
				for _, h := range holds {
					_, err := h.release(ctx, nd)
					errs = append(errs, err)
				}
				return true, errors.Join(errs...)
			})
		}
		quorum.Retry(ctx, m.c.q, o.ttl, giveBack(ctx, on), giveBack)
	}
	var (
		last    []quorum.Reply[[]grant] // the last attempt's replies
		blocked int                     // the name it stopped at
	)
	q := line.Line[*Lease]{N: n, O: o.waiting(),
		Attempt: func(ctx context.Context, join bool) (*Lease, *line.Ticket, time.Duration, error) {
			sent := time.Now()
			for _, t := range tickets {
				t.Join, t.Sent = join, sent
			}
			a.attempt()
			l, miss, replies, err := m.attempt(ctx, token, tickets)
			if join {
				queuedAt(replies, joined)
			}
			if cause, ok := rejoined(err); ok {
				for _, t := range tickets {
					t.Rotate()
				}
				token = tickets[0].Token
				h, ho = m.hold(token)
				err = cause
			}
			if err == nil && len(m.c.q.Nodes) > 1 {
				// Where a node did not grant every name, the ticket may be
				// queued at the name it stopped at.
				missed := func(i int) bool { return replies[i].Err != nil || !allGranted(replies[i].V, len(m.names)) }
				won(missed)
			}
			last, blocked = replies, miss.blocked
			return l, tickets[blocked], miss.holderTTL, err
		},
		// A single server that answered left the other queues already.
		// The waiter keeps what a release granted it meanwhile (keep): its
		// next attempt takes it, or undoes it and hands it on. A leave
		// that hands on could land late, after the waiter joined that
		// queue again and was granted the name as part of a lease, and
		// take the name from under the lease.
		Refused: func() {
			// The leave's filter runs on nodes' goroutines that may
			// outlast it: it keeps this attempt's replies.
			replies := last
			leave(func(i int) bool { return !whole(i) || replies[i].Err != nil }, blocked, true, false)
		},
		Quit: func(err error) error {
			quit(quorum.Every)
			return err
		},
		Granted: func(ctx context.Context) *Lease {
			if !grantsAll {
				return nil
			}
			return m.grantedLease(ctx, tickets, h.marking(tickets), &ho, won)
		},
	}
	l, err := q.Wait(ctx)
	return left(l), err
}

// grantedLease is the lease that grants of all names from a majority of
// nodes gave a waiter, through any of its tickets (see grantedLease).
// The waiter then leaves (won) the queues of the nodes that did not grant
// it.
func (m *MultiLock) grantedLease(ctx context.Context, tickets []*line.Ticket, h multiHold, o *options, won func(func(int) bool)) *Lease {
	for _, t := range tickets {
		l, granted := grantedLease(ctx, m.c, o, m.leased, t, h)
		if l == nil {
			continue
		}
		if len(m.c.q.Nodes) > 1 {
			won(func(i int) bool { return !granted[i] })
		}
		return l
	}
	return nil
}

// queuedAt marks the names at which an attempt that joined may have
// queued its ticket on some node: the one a node refused, or any it had
// not passed when its call failed (one script for all names fails
// without saying where it stopped).
func queuedAt(replies []quorum.Reply[[]grant], joined []bool) {
	for _, r := range replies {
		k := len(r.V)
		switch {
		case r.Err != nil:
			for j := k; j < len(joined); j++ {
				joined[j] = true
			}
		case r.Err == nil && k > 0 && !r.V[k-1].Acquired:
			joined[k-1] = true
		}
	}
}

// allGranted reports whether a node's reply granted all n names.
func allGranted(gs []grant, n int) bool { return len(gs) == n && gs[n-1].Acquired }

// State reads the state of each of the MultiLock's names, in the order of
// Names, as Mutex.State does; it stops at the first error. A MultiLock
// holds its names as Mutexes do, so a name's Holder is the MultiLock
// lease's ID. It costs one round trip per name.
func (m *MultiLock) State(ctx context.Context) ([]MutexState, error) {
	if err := m.check(ctx); err != nil {
		return nil, err
	}
	states := make([]MutexState, len(m.names))
	for i, k := range m.keys {
		var err error
		if states[i], err = m.c.mutexState(ctx, &m.opts, m.names[i], k); err != nil {
			return states[:i+1], err
		}
	}
	return states, nil
}

func (h multiHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	var least time.Duration
	for j, mh := range h {
		r := quorum.RetryTransient(ctx, n, func(ctx context.Context) (time.Duration, error) { return mh.left(ctx, n) })
		if r.Err != nil || r.V <= 0 {
			return 0, r.Err
		}
		if j == 0 || r.V < least {
			least = r.V
		}
	}
	return least, nil
}

func (h multiHold) lockKeys() []string {
	keys := make([]string, len(h))
	for i, mh := range h {
		keys[i] = mh.keys.lock
	}
	return keys
}
