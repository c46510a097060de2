package core

import (
	"context"
	"crypto/rand"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

// RWMutex is a distributed reader/writer lock: many read leases or one
// write lease at a time. A writer that waits keeps new readers out (writer
// preference), so a steady stream of readers cannot starve writers; the
// price is that a steady stream of writers can starve readers. Read and
// write leases are Leases: each expires at its TTL unless extended (by hand
// or WithAutoExtend), so a reader or writer that died frees its share at
// its TTL. An RWMutex is safe for concurrent use and cheap: make one per
// name as needed. It is not reentrant: a holder that asks again waits for
// itself; a writer that wants to go on reading calls Lease.Downgrade.
//
// Waiting readers and writers register in Redis with entries that lapse
// unless their attempts refresh them, as FairMutex waiters do; a writer's
// entry is what keeps readers out, so a writer that died or gave up stops
// doing so within one TTL, or at once when it leaves. A release that frees
// the lock grants it to a waiting writer, which under Notify hears so on
// its ticket and holds the lock without another request; with no writer
// waiting it wakes every waiting reader at once: it deletes their waiting
// set and publishes a wake-up on the set's channel, which each of their
// Clients hears (one message per Client, however many wait; no CONFIG
// needed). All waiters also retry on their own every quarter TTL or
// sooner (plus backoff jitter). Under Poll only a waiter's
// own retry notices a release: a writer waits up to the backoff cap after
// the last reader left.
//
// Tokens. Every lease draws a fencing token from the name's counter. A
// write lease's token is greater than every token of a lease that ended
// before it was granted, as for a Mutex; a read lease's token is greater
// than every write lease's token before it, but for one that Lease.Downgrade
// made of a write lease, which keeps that lease's token. With a quorum, read tokens are
// not made durable (readers do not exclude each other, so nothing is fenced
// between them); a later write token is only guaranteed to exceed earlier
// write tokens.
type RWMutex struct {
	c     *Client
	name  string
	names leaseNames // name alone, as a lease takes it
	opts  options
	keys  rwKeys
}

type rwKeys struct {
	writer, readers, writers, waiting, tickets, fence string
}

func newRWKeys(o options, name string) rwKeys {
	k := keyOf(o, name)
	return rwKeys{writer: k(":rw:w"), readers: k(":rw:r"), writers: k(":rw:wq"),
		waiting: k(":rw:rq"), tickets: k(":rw" + ticketInfix), fence: k(":fence")}
}

// RWMutex returns the reader/writer lock called name. Options given here
// override the Client's for this lock. Bad options are reported by its
// methods.
func (c *Client) RWMutex(name string, opts ...Option) *RWMutex {
	o := c.options("RWMutex", opts)
	return &RWMutex{c: c, name: name, names: newLeaseNames(o, name), opts: o, keys: newRWKeys(o, name)}
}

// Name returns the lock's name.
func (m *RWMutex) Name() string { return m.name }

// TryRLock makes one attempt at a read lease: it returns ErrNotAcquired
// when a writer holds the lock or waits for it, and ErrNoQuorum when too
// few nodes answered (ErrUnavailable or ErrReplicasBehind when they could
// not serve it yet).
func (m *RWMutex) TryRLock(ctx context.Context) (*Lease, error) {
	return m.try(ctx, true)
}

// TryLock makes one attempt at the write lease: it returns ErrNotAcquired
// when a reader or a writer holds the lock, and ErrNoQuorum when too few
// nodes answered (ErrUnavailable or ErrReplicasBehind when they could not
// serve it yet).
func (m *RWMutex) TryLock(ctx context.Context) (*Lease, error) {
	return m.try(ctx, false)
}

// RLock waits for a read lease until it is granted, ctx ends (its error is
// returned), or WithMaxAttempts attempts failed (ErrNotAcquired). It waits
// out nodes that fail (ErrNoQuorum, ErrUnavailable, ErrReplicasBehind):
// when ctx ends first, ctx's error is returned joined with the last of
// them.
func (m *RWMutex) RLock(ctx context.Context) (*Lease, error) {
	return m.wait(ctx, true)
}

// Lock waits for the write lease as RLock does for a read lease. While it
// waits, no new read lease is granted.
func (m *RWMutex) Lock(ctx context.Context) (*Lease, error) {
	return m.wait(ctx, false)
}

func (m *RWMutex) try(ctx context.Context, read bool) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	a := m.opts.acquiring(ctx, m.name, false)
	a.attempt()
	l, _, err := m.attempt(ctx, read, rand.Text(), 0, nil)
	return a.done(l, err)
}

func (m *RWMutex) wait(ctx context.Context, read bool) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	wait, _ := lineTimes(&m.opts)
	a := m.opts.acquiring(ctx, m.name, true)
	attempt := func(ctx context.Context, token string, g *line.Grants) (*Lease, time.Duration, error) {
		a.attempt()
		return m.attempt(ctx, read, token, wait, g)
	}
	out := func(token string) hold { return m.hold(read, token, false) }
	if read {
		// A release wakes every waiting reader at once by deleting their
		// set (see rw_release.lua): one event per Client.
		waiting := func(string) string { return m.keys.waiting }
		return a.done(waitOn(ctx, m.c, &m.opts, m.names, waiting, false, out, attempt))
	}
	return a.done(waitInLine(ctx, m.c, &m.opts, m.names, m.keys.tickets, out, attempt))
}

// attempt is one Redlock round; wait 0 does not register a waiter. A
// waiter that hears grants (Notify) passes its grants, for the attempt to
// note what it found; only then may a release grant a writer the lock.
func (m *RWMutex) attempt(ctx context.Context, read bool, token string, wait time.Duration, g *line.Grants) (*Lease, time.Duration, error) {
	k, o := m.keys, &m.opts
	if !read {
		g.Expect()
	}
	ask := func(ctx context.Context, i int, n *quorum.Node) (grant, error) {
		if read {
			r, err := n.Driver.RWMutexReadAcquire(ctx, driver.RWMutexReadAcquireRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Token: token, TTL: o.ttl, Wait: wait, Idle: o.idle})
			return grant{Acquired: r.Acquired, Fence: r.Fence, HolderTTL: r.HolderTTL}, err
		}
		r, err := n.Driver.RWMutexWriteAcquire(ctx, driver.RWMutexWriteAcquireRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Token: token, TTL: o.ttl, Wait: wait, Secret: g.Secret(i), Idle: o.idle})
		a := grant{Acquired: r.Acquired, Fence: r.Fence, HolderTTL: r.HolderTTL}
		g.Observe(i, a.Acquired, a.Fence, err)
		return a, err
	}
	var durable grantDurable
	if !read {
		durable = fenceDurable(m.c, o, k.writer, k.fence, token)
	}
	return grantRound(ctx, m.c, o, m.names, m.hold(read, token, false), m.hold(read, token, wait > 0), wait > 0, ask, durable)
}

func (m *RWMutex) hold(read bool, token string, keep bool) rwHold {
	return rwHold{keys: m.keys, read: read, lineHold: newLineHold(&m.opts, token, keep), forcedFlag: newForcedFlag()}
}

// rwHold is a read or write lease's hold: its token in the readers' set or
// in the write lock. keep marks the undo of an attempt, which stays
// registered as a waiter (a writer's registration keeps readers out).
type rwHold struct {
	keys rwKeys
	read bool
	lineHold
	forcedFlag // a writer's: a node said a force-release freed it
}

func (h rwHold) extend(ctx context.Context, n *quorum.Node, ttl time.Duration) (bool, error) {
	if h.read {
		v, err := n.Driver.RWMutexReadExtend(ctx, h.keys.readers, h.token, ttl)
		return v == 1, err
	}
	v, err := n.ExtendKeyed(ctx, h.keys.writer, h.keys.tickets+h.token, forcedKey(h.keys.writer), h.token, ttl)
	h.heard(v)
	return v == 1, err
}

func (h rwHold) release(ctx context.Context, n *quorum.Node) (bool, error) {
	k := h.keys
	v, err := n.Driver.RWMutexRelease(ctx, driver.RWMutexReleaseRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Token: h.token, Keep: boolInt(h.keep), Idle: h.idle, Left: h.ttl})
	if err == nil && v == 0 && !h.read && !h.keep {
		h.askForced(ctx, n, k.writer, h.token) // only a release that found the lock gone asks
	}
	return v == 1, err
}
