package core

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

// FairMutex is a distributed lock granted first come, first served. Lock
// joins a line kept in Redis and is granted the lock only when it is first
// in line; TryLock succeeds only when the lock is free and no one waits.
// Leases are the same as a Mutex's. A FairMutex is safe for concurrent use
// and cheap: make one per name as needed. With WithOwner it is reentrant,
// as a Mutex is: while a lease of the owner holds the lock, the owner's
// TryLock and Lock take it again at once, with a fencing token drawn
// afresh, without joining the line or passing anyone in it, and the lock
// is free for the next in line once every lease of the owner was unlocked
// or expired.
//
// Each waiter's entry lapses unless its attempts refresh it (about every
// quarter TTL; the entry lasts one TTL), so a waiter whose process died
// holds the line up no longer than a dead holder would; a waiter whose ctx
// ends or whose attempts run out leaves the line at once. A release grants
// the lock to the waiter first in line and, under Notify, tells only that
// waiter, through its own ticket, so that it holds
// the lock without another request once a majority of nodes granted it.
// Every waiter also retries at the holder's TTL or a quarter TTL,
// whichever comes first (plus backoff jitter), and under Poll at its
// backoff, capped at a quarter TTL.
//
// Order. On one node, waiters acquire in the order in which their first
// attempts reached the server, skipping those whose entries lapsed. With a
// quorum, a waiter's place is the time its Lock began on its own clock, the
// same on every node, so every node orders the waiters alike and the first
// of them is first on every node it reached, which grants it a majority
// once the lock is free there: waiters acquire in the order in which their
// Lock calls began, up to the clock skew between their machines. A
// waiter whose entry reached fewer than a majority of nodes (some were
// down) may be overtaken on the others until its next attempt reaches them.
//
// A Client whose clock runs behind the others' gets places earlier than
// its Lock calls began, by that much; with clocks kept by NTP that is
// milliseconds.
//
// Under Poll, only the first waiter's own retry notices a release, so a
// hand-off costs up to the backoff cap: give a FairMutex under Poll a
// small cap (WithBackoff).
//
// A FairMutex and a Mutex of the same name are different locks.
type FairMutex struct {
	c     *Client
	name  string
	names leaseNames // name alone, as a lease takes it
	opts  options
	keys  fairKeys
}

type fairKeys struct {
	lock, fence, queue, lapse string
	ticketKeys
}

func newFairKeys(o options, name string) fairKeys {
	k := keyOf(o, name)
	return fairKeys{lock: k(":fair"), fence: k(":fence"), queue: k(":fair:q"),
		lapse: k(":fair:lapse"), ticketKeys: newTicketKeys(k, ":fair")}
}

// FairMutex returns the fair lock called name. Options given here override
// the Client's for this lock. Bad options are reported by its methods.
func (c *Client) FairMutex(name string, opts ...Option) *FairMutex {
	o := c.options("FairMutex", opts)
	return &FairMutex{c: c, name: name, names: newLeaseNames(o, name), opts: o, keys: newFairKeys(o, name)}
}

// Name returns the lock's name.
func (m *FairMutex) Name() string { return m.name }

// TryLock makes one attempt: it returns ErrNotAcquired when the lock is
// held or anyone waits for it, and ErrNoQuorum when too few nodes answered
// (ErrUnavailable or ErrReplicasBehind when they could not serve it yet).
func (m *FairMutex) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	a := m.opts.acquiring(ctx, m.name, false)
	a.attempt()
	l, _, err := m.attempt(ctx, rand.Text()+m.opts.metaTag(), 0, 0, nil)
	return a.done(l, err)
}

// Lock joins the line and waits until the lock is granted, ctx ends (its
// error is returned), or WithMaxAttempts attempts failed (ErrNotAcquired);
// in both cases it leaves the line. It waits out nodes that fail
// (ErrNoQuorum, ErrUnavailable, ErrReplicasBehind): when ctx ends first,
// ctx's error is returned joined with the last of them.
func (m *FairMutex) Lock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	var place int64 // on one node, the server gives the next place in line
	if len(m.c.q.Nodes) > 1 {
		place = time.Now().UnixMicro()
	}
	wait, _ := lineTimes(&m.opts)
	out := func(token string) hold { return m.hold(token, false) }
	a := m.opts.acquiring(ctx, m.name, true)
	return a.done(waitInLine(ctx, m.c, &m.opts, m.names, m.keys.ids, out,
		func(ctx context.Context, token string, g *line.Grants, _ bool) (*Lease, time.Duration, error) {
			a.attempt()
			return m.attempt(ctx, token, place, wait, g)
		}))
}

// attempt is one Redlock round; wait 0 does not join the line (TryLock).
// A waiter in line passes its grants, for the attempt to note what it found.
func (m *FairMutex) attempt(ctx context.Context, token string, place int64, wait time.Duration, g *line.Grants) (*Lease, time.Duration, error) {
	k, o := m.keys, &m.opts
	g.Expect()
	ask := func(ctx context.Context, i int, n *quorum.Node) (grant, error) {
		r, err := n.Driver.FairMutexAcquire(ctx, driver.FairMutexAcquireRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Lapse: k.lapse, Tickets: k.tickets, Token: token, TTL: o.ttl, Place: place, Wait: wait, Secret: g.Secret(i), Idle: o.idle, Owner: o.owner})
		a := grant{Acquired: r.Acquired, Fence: r.Fence, HolderTTL: r.HolderTTL}
		g.Observe(i, a.Acquired, a.Fence, err)
		return a, err
	}
	return grantRound(ctx, m.c, o, m.names, m.hold(token, false), m.hold(token, wait > 0), wait > 0, ask,
		fenceDurable(m.c, o, k.lock, k.fence, token))
}

func (m *FairMutex) hold(token string, keep bool) fairHold {
	return fairHold{keys: m.keys, lineHold: newLineHold(&m.opts, token, keep), owned: m.opts.owner != "", forcedFlag: newForcedFlag()}
}

// fairHold is a FairMutex lease's hold: its token in the lock key, or for
// an owner a field of the owner's hash, as a reentrant Mutex's. keep
// marks the undo of an attempt, which keeps the waiter's place in line.
type fairHold struct {
	keys fairKeys
	lineHold
	owned      bool
	forcedFlag // a plain lease's: a node said a force-release freed it
}

func (h fairHold) extend(ctx context.Context, n *quorum.Node, ttl time.Duration) (bool, error) {
	if h.owned {
		v, err := n.Driver.ExtendOwned(ctx, h.keys.lock, h.keys.tickets, h.token, ttl, h.keys.ids+h.token)
		return v == 1, err
	}
	v, err := n.Extend(ctx, h.keys.lock, h.keys.tickets, h.keys.ids+h.token, forcedKey(h.keys.lock), h.token, ttl)
	h.heard(v)
	return v == 1, err
}

func (h fairHold) release(ctx context.Context, n *quorum.Node) (bool, error) {
	k := h.keys
	v, err := n.Driver.FairMutexRelease(ctx, driver.FairMutexReleaseRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Lapse: k.lapse, Tickets: k.tickets, Token: h.token, Keep: boolInt(h.keep), Idle: h.idle, Left: h.ttl})
	if err == nil && v == 0 && !h.keep && !h.owned {
		h.askForced(ctx, n, k.lock, h.token) // only a release that found the lock gone asks
	}
	return v == 1, err
}

// State reads who holds the lock, for how long, and who waits in its
// line, from every node at once, as Mutex.State does (for an owner's
// leases, Holder is the owner and Holds their count), and each node's
// line: the first LineShown waiters, with the time until each place
// lapses. It costs one round trip: a read-only script per node, O(log n)
// in the line's length (and O(leases) for an owner's).
func (m *FairMutex) State(ctx context.Context) (MutexState, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return MutexState{Name: m.name}, err
	}
	k := m.keys
	replies := quorum.Fanout(ctx, m.c.q, m.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (MutexNodeState, error) {
		r, err := nd.Driver.FairMutexState(ctx, k.lock, k.fence, k.queue, k.lapse, LineShown)
		if err != nil {
			return MutexNodeState{}, err
		}
		s := MutexNodeState{Holder: r.Holder, Owned: r.Owned, Holds: int(r.Holds), TTL: r.TTL, Token: uint64(max(r.Fence, 0)), Waiting: int(r.Waiting)}
		if len(r.Line)%2 != 0 {
			return MutexNodeState{}, fmt.Errorf("%w: fair_state.lua listed a waiter without its lapse time", driver.ErrUnexpectedReply)
		}
		for i := 0; i < len(r.Line); i += 2 {
			ms, err := strconv.ParseInt(r.Line[i+1], 10, 64)
			if err != nil {
				return MutexNodeState{}, fmt.Errorf("%w: fair_state.lua gave waiter %q the lapse time %q", driver.ErrUnexpectedReply, r.Line[i], r.Line[i+1])
			}
			s.Line = append(s.Line, Waiter{ID: r.Line[i], Lapses: time.Duration(ms) * time.Millisecond})
		}
		return s, nil
	})
	return m.c.summarize(ctx, m.name, replies)
}

// ForceUnlock frees the fair lock whoever holds it and grants it to the
// waiter first in line, as Mutex.ForceUnlock does: it breaks mutual
// exclusion by design.
func (m *FairMutex) ForceUnlock(ctx context.Context) error {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return err
	}
	k, o := m.keys, &m.opts
	return force(ctx, m.c, o, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		return nd.Driver.FairMutexForce(ctx, driver.FairMutexForceRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Lapse: k.lapse, Tickets: k.tickets, Forced: forcedKey(k.lock), Idle: o.idle, Left: o.ttl})
	})
}

func (h fairHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	if h.owned {
		return n.Driver.OwnedTTL(ctx, h.keys.lock, h.token)
	}
	return lockLeft(ctx, n, h.keys.lock, h.token, h.forcedFlag)
}

func (h fairHold) lockKeys() []string { return []string{h.keys.lock} }
