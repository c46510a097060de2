package core

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
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
// name as needed. Without an owner it is not reentrant: a holder that
// asks again waits for itself; a writer that wants to go on reading calls
// Lease.Downgrade. With WithOwner its write lock is reentrant, as a
// Mutex is: while a write lease of the owner holds it, the owner's
// TryLock and Lock take it again at once (a fencing token drawn afresh,
// no waiting in line), and it is free once every write lease of the owner
// was unlocked or expired. The owner's TryRLock and RLock, while it
// holds the write lock, get a read lease at once, writers waiting or not:
// it reads what it writes, as after a Downgrade, and the write lock's
// release leaves that read lease holding. The other way round there is no
// upgrade: an owner holding only read leases that asks for the write lock
// waits, like any writer, for every read lease, its own included, to end.
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
	writer, readers, writers, waiting, fence string
	ticketKeys
}

func newRWKeys(o options, name string) rwKeys {
	k := keyOf(o, name)
	return rwKeys{writer: k(":rw:w"), readers: k(":rw:r"), writers: k(":rw:wq"),
		waiting: k(":rw:rq"), fence: k(":fence"), ticketKeys: newTicketKeys(k, ":rw")}
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
	l, _, err := m.attempt(ctx, read, rand.Text()+m.opts.metaTag(), 0, nil)
	return a.done(l, err)
}

func (m *RWMutex) wait(ctx context.Context, read bool) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	wait, _ := lineTimes(&m.opts)
	a := m.opts.acquiring(ctx, m.name, true)
	attempt := func(ctx context.Context, token string, g *line.Grants, _ bool) (*Lease, time.Duration, error) {
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
	return a.done(waitInLine(ctx, m.c, &m.opts, m.names, m.keys.ids, out, attempt))
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
			r, err := n.Driver.RWMutexReadAcquire(ctx, driver.RWMutexReadAcquireRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Token: token, TTL: o.ttl, Wait: wait, Idle: o.idle, Owner: o.owner})
			return grant{Acquired: r.Acquired, Fence: r.Fence, HolderTTL: r.HolderTTL}, err
		}
		r, err := n.Driver.RWMutexWriteAcquire(ctx, driver.RWMutexWriteAcquireRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Token: token, TTL: o.ttl, Wait: wait, Secret: g.Secret(i), Idle: o.idle, Owner: o.owner})
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
	return rwHold{keys: m.keys, read: read, owned: !read && m.opts.owner != "", lineHold: newLineHold(&m.opts, token, keep), forcedFlag: newForcedFlag()}
}

// rwHold is a read or write lease's hold: its token in the readers' set or
// in the write lock. keep marks the undo of an attempt, which stays
// registered as a waiter (a writer's registration keeps readers out).
type rwHold struct {
	keys  rwKeys
	read  bool
	owned bool // an owner's write lease: a field of the owner's hash, as a reentrant Mutex's
	lineHold
	forcedFlag // a plain writer's: a node said a force-release freed it
}

func (h rwHold) extend(ctx context.Context, n *quorum.Node, ttl time.Duration) (bool, error) {
	if h.read {
		v, err := n.Driver.RWMutexReadExtend(ctx, h.keys.readers, h.token, ttl)
		return v == 1, err
	}
	if h.owned {
		v, err := n.Driver.ExtendOwned(ctx, h.keys.writer, h.keys.tickets, h.token, ttl, h.keys.ids+h.token)
		return v == 1, err
	}
	v, err := n.Extend(ctx, h.keys.writer, h.keys.tickets, h.keys.ids+h.token, forcedKey(h.keys.writer), h.token, ttl)
	h.heard(v)
	return v == 1, err
}

func (h rwHold) release(ctx context.Context, n *quorum.Node) (bool, error) {
	k := h.keys
	v, err := n.Driver.RWMutexRelease(ctx, driver.RWMutexReleaseRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Token: h.token, Keep: boolInt(h.keep), Idle: h.idle, Left: h.ttl})
	if err == nil && v == 0 && !h.read && !h.keep && !h.owned {
		h.askForced(ctx, n, k.writer, h.token) // only a release that found the lock gone asks
	}
	return v == 1, err
}

// RWMutexState is what the servers hold for an RWMutex name at one
// moment: its writer, its read leases, and who waits. RWMutex.State
// returns it. The summary fields are what a majority of nodes agree on;
// PerNode has each node's own view.
type RWMutexState struct {
	// Name is the lock's name.
	Name string
	// Locked reports that a majority of nodes agree on one writer, Writer.
	Locked bool
	// Writer is the Lease.ID of the write lease a majority agrees on, or
	// the owner (WithOwner) whose write leases hold it; empty when none.
	Writer string
	// Metadata is what Writer's lease was taken with (WithMetadata);
	// empty for none.
	Metadata string
	// Owned reports that Writer is an owner, and Holds how many of its
	// write leases a majority holds (1 for a plain writer).
	Owned bool
	Holds int
	// TTL is how long a majority still holds the write lock without an
	// extension; 0 without a writer.
	TTL time.Duration
	// Token is the fencing token of the name's latest grant, as a majority
	// has it: while Locked, the Token of Writer's lease.
	Token uint64
	// Nodes is how many nodes Writer holds; 0 without a writer.
	Nodes int
	// Readers are the read leases a majority of nodes hold (of those the
	// nodes list), each with how long a majority still holds it.
	Readers []Reader
	// WaitingWriters and WaitingReaders are the waiting writers and
	// readers as a majority of nodes has them (a node where a grant did not
	// land may still count its writer as waiting).
	WaitingWriters, WaitingReaders int
	// PerNode is each node's view, in the order of the Client's nodes.
	PerNode []RWMutexNodeState
}

// RWMutexNodeState is one node's view of an RWMutex name.
type RWMutexNodeState struct {
	// Err is the node's error; the other fields are then zero.
	Err error
	// Writer is the Lease.ID of the write lease on this node, or the
	// owner whose write leases hold it; empty when none.
	Writer string
	// Owned reports that Writer is an owner, and Holds how many write
	// leases hold the lock here.
	Owned bool
	Holds int
	// TTL is the write lock's remaining time on this node; 0 when none.
	TTL time.Duration
	// Token is this node's fencing counter: the token of its latest grant.
	Token uint64
	// Readers is the number of read leases on this node.
	Readers int
	// ReadLeases are the read leases, at most LineShown, soonest to lapse
	// first.
	ReadLeases []Reader
	// WaitingWriters is the number of writers waiting on this node, the
	// writer left out; Writers lists them, at most LineShown, soonest to
	// lapse first, each with the time until its wait lapses.
	WaitingWriters int
	Writers        []Waiter
	// WaitingReaders is the number of readers waiting on this node.
	WaitingReaders int
}

// Reader is one read lease.
type Reader struct {
	// ID is the read lease's Lease.ID.
	ID string
	// Metadata is what the lease was taken with (WithMetadata); empty for
	// none.
	Metadata string
	// TTL is how long it still holds without an extension.
	TTL time.Duration
}

// State reads the writer, the read leases and the waiters of the lock
// from every node at once; it touches no lock and writes nothing. Its
// errors are those of Mutex.State. It costs one round trip: a
// read-only script per node, O(log n + LineShown) in the leases and
// waiters. As Mutex.State, it is for operators and dashboards.
func (m *RWMutex) State(ctx context.Context) (RWMutexState, error) {
	s := RWMutexState{Name: m.name}
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return s, err
	}
	k := m.keys
	replies := quorum.Fanout(ctx, m.c.q, m.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (RWMutexNodeState, error) {
		r, err := nd.Driver.RWMutexState(ctx, k.writer, k.readers, k.writers, k.waiting, k.fence, LineShown)
		if err != nil {
			return RWMutexNodeState{}, err
		}
		s := RWMutexNodeState{Writer: r.Writer, Owned: r.Owned, Holds: int(r.Holds), Token: uint64(max(r.Fence, 0)), Readers: int(r.Readers),
			WaitingWriters: int(r.Writers), WaitingReaders: int(r.Waiting)}
		if s.Writer != "" {
			s.TTL = max(r.TTL, 0)
		}
		if len(r.Listed)%3 != 0 {
			return RWMutexNodeState{}, fmt.Errorf("%w: rw_state.lua listed %d strings, not kind, token and time each", driver.ErrUnexpectedReply, len(r.Listed))
		}
		for i := 0; i < len(r.Listed); i += 3 {
			ms, err := strconv.ParseInt(r.Listed[i+2], 10, 64)
			if err != nil {
				return RWMutexNodeState{}, fmt.Errorf("%w: rw_state.lua gave %q the time %q", driver.ErrUnexpectedReply, r.Listed[i+1], r.Listed[i+2])
			}
			left := time.Duration(ms) * time.Millisecond
			if r.Listed[i] == "r" {
				s.ReadLeases = append(s.ReadLeases, Reader{ID: r.Listed[i+1], Metadata: MetadataOf(r.Listed[i+1]), TTL: left})
			} else {
				s.Writers = append(s.Writers, Waiter{ID: r.Listed[i+1], Lapses: left})
			}
		}
		return s, nil
	})
	s.PerNode = make([]RWMutexNodeState, len(replies))
	writers := make([]quorum.Reply[MutexNodeState], len(replies)) // as a Mutex's holders
	readers := map[string][]time.Duration{}
	for i, r := range replies {
		writers[i] = quorum.Reply[MutexNodeState]{V: MutexNodeState{Holder: r.V.Writer, Owned: r.V.Owned, Holds: r.V.Holds, TTL: r.V.TTL, Token: r.V.Token}, Err: r.Err}
		if r.Err != nil {
			s.PerNode[i] = RWMutexNodeState{Err: m.c.q.NodeError(i, r.Err)}
			continue
		}
		s.PerNode[i] = r.V
		for _, rd := range r.V.ReadLeases {
			readers[rd.ID] = append(readers[rd.ID], rd.TTL)
		}
	}
	if err := quorum.NoQuorum(ctx, m.c.q, replies); err != nil {
		return s, err
	}
	answered := slices.DeleteFunc(slices.Clone(s.PerNode), func(n RWMutexNodeState) bool { return n.Err != nil })
	s.WaitingWriters = quorum.MajorityHas(m.c.q.Quorum, answered, func(n RWMutexNodeState) int { return n.WaitingWriters })
	s.WaitingReaders = quorum.MajorityHas(m.c.q.Quorum, answered, func(n RWMutexNodeState) int { return n.WaitingReaders })
	w, _ := m.c.summarize(ctx, m.name, writers)
	s.Locked, s.Writer, s.Owned, s.Holds, s.Metadata, s.TTL, s.Token, s.Nodes = w.Locked, w.Holder, w.Owned, w.Holds, w.Metadata, w.TTL, w.Token, w.Nodes
	for id, ttls := range readers {
		if len(ttls) >= m.c.q.Quorum {
			s.Readers = append(s.Readers, Reader{ID: id, Metadata: MetadataOf(id), TTL: quorum.MajorityHas(m.c.q.Quorum, ttls, func(d time.Duration) time.Duration { return d })})
		}
	}
	slices.SortFunc(s.Readers, func(a, b Reader) int { return cmp.Or(cmp.Compare(a.TTL, b.TTL), cmp.Compare(a.ID, b.ID)) })
	return s, nil
}

// ForceUnlock frees the lock from its writer and every reader, and grants
// it to the first waiting writer, or else wakes the waiting readers, as
// Mutex.ForceUnlock does: it breaks mutual exclusion by design.
func (m *RWMutex) ForceUnlock(ctx context.Context) error {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return err
	}
	k, o := m.keys, &m.opts
	return force(ctx, m.c, o, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		return nd.Driver.RWMutexForce(ctx, driver.RWMutexForceRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Forced: forcedKey(k.writer), Idle: o.idle, Left: o.ttl})
	})
}

// Downgrade turns an RWMutex write lease into a read lease at once: on
// each node one script takes the read lease and gives up the write lock
// together, so no other writer can take the lock in between (Redisson's
// "acquire the read lock, then release the write lock"). It returns the
// read lease, a Lease like RLock's (Extend, Unlock, Valid, TTL, Done and
// WithAutoExtend work on it), with the write lease's TTL option; l ends as
// after Unlock (Done closes, Err returns ErrNotHeld).
//
// The read lease keeps l's Token and ID: it carries on the same hold, and
// no writer came between, so a resource fenced by tokens accepts its
// reads as it accepted l's writes. Waiting writers keep waiting until the
// read lease and the other readers' are released; with no writer waiting,
// the waiting readers are woken as by a writer's Unlock, and new readers
// get in. An owner's write lease (WithOwner) gives up only itself: the
// owner's other write leases keep the write lock.
//
// It needs a majority of the nodes, as an acquisition does. When it does
// not get one, l ends as well, released where it may still hold: it
// returns ErrLost when a majority no longer held l (Err then returns
// ErrLost; nodes that did not hold it write nothing), and otherwise
// ErrNoQuorum (or ErrUnavailable, ErrReplicasBehind, ctx's error). It
// returns ErrNotHeld after Unlock, l's Err once l ended, and ErrInvalid,
// writing nothing, for a lease that is not an RWMutex's write lease. It
// costs one script per node.
func (l *Lease) Downgrade(ctx context.Context) (*Lease, error) {
	if l == nil {
		return nil, ErrNotHeld
	}
	h, ok := l.hold.(rwHold)
	if !ok || h.read {
		return nil, invalid("Downgrade takes an RWMutex's write lease, and the lease of %q is not one", l.name)
	}
	if err := l.state(ctx); err != nil {
		return nil, err
	}
	// An extension of the write lease that landed after the downgrade
	// would find it gone and call it lost.
	turn := l.turn()
	select {
	case turn <- struct{}{}:
		defer func() { <-turn }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := l.Err(); err != nil {
		return nil, err
	}
	a := l.opts.acquiring(ctx, l.name, false)
	a.attempt()
	read, err := l.downgrade(ctx, h)
	return a.done(read, err)
}

func (l *Lease) downgrade(ctx context.Context, h rwHold) (*Lease, error) {
	o := l.opts
	if s, ok := o.observer.(observedSince); ok {
		o.observer = s.Observer // the read lease is observed from its own start
	}
	k := h.keys
	start := time.Now()
	replies := quorum.Vote(ctx, l.c.q, o.timing(), func(ctx context.Context, _ int, n *quorum.Node) (bool, error) {
		v, err := n.Driver.RWMutexDowngrade(ctx, driver.RWMutexDowngradeRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Token: h.token, TTL: o.ttl})
		return n.Extended(ctx, o.timing(), l.names.acked, v == 1, err)
	}, quorum.Ballot[bool]{Yes: isTrue})
	if quorum.Held(replies) >= l.c.q.Quorum {
		if until, ok := o.timing().ValidUntil(start); ok {
			l.end(ErrNotHeld)
			var released error
			l.reportRelease(nil, &released)
			read := newLease(l.c, l.names, o, rwHold{keys: k, read: true, lineHold: h.lineHold}, l.fence)
			read.start(until)
			return read, nil
		}
	}
	// Where the downgrade landed, or may land, the release takes the read
	// lease back; where it did not, the write lease.
	releaseOn(context.WithoutCancel(ctx), l.c, &o, h, func(i int) bool { return replies[i].V || replies[i].Err != nil })
	err := quorum.NoQuorum(ctx, l.c.q, replies)
	if err == nil {
		err = quorum.Unconfirmed(l.c.q, replies)
	}
	if err != nil {
		l.end(ErrNotHeld) // given up: it may still hold where no release reached
		return nil, err
	}
	l.end(ErrLost)
	return nil, ErrLost
}

// end ends the lease with err, unless it ended before.
func (l *Lease) end(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(err)
}

func (h rwHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	if h.read {
		return n.Driver.RWMutexReadTTL(ctx, h.keys.readers, h.token)
	}
	if h.owned {
		return n.Driver.OwnedTTL(ctx, h.keys.writer, h.token)
	}
	return lockLeft(ctx, n, h.keys.writer, h.token, h.forcedFlag)
}

func (h rwHold) lockKeys() []string {
	if h.read {
		return nil
	}
	return []string{h.keys.writer}
}
