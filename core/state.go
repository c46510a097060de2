package core

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

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

// State reads who holds the lock, for how long, and who waits in its
// line, from every node at once, as Mutex.State does (MutexState's Owned
// and Holds are those of a plain lock), and each node's line: the first
// LineShown waiters, with the time until each place lapses. It costs one
// round trip: a read-only script per node, O(log n) in the line's length.
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
		s := MutexNodeState{Holder: r.Holder, TTL: r.TTL, Token: uint64(max(r.Fence, 0)), Waiting: int(r.Waiting)}
		if s.Holder != "" {
			s.Holds = 1
		}
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
	s.Token = quorum.MajorityHas(c.q.Quorum, holders, token)
	s.TTL = quorum.MajorityHas(c.q.Quorum, holders, func(n MutexNodeState) time.Duration { return n.TTL })
	s.Holds = quorum.MajorityHas(c.q.Quorum, holders, func(n MutexNodeState) int { return n.Holds })
	return s, nil
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
	// Writer is the Lease.ID of the write lease a majority agrees on;
	// empty when none.
	Writer string
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
	// Writer is the Lease.ID of the write lease on this node; empty when
	// none.
	Writer string
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
		s := RWMutexNodeState{Writer: r.Writer, Token: uint64(max(r.Fence, 0)), Readers: int(r.Readers),
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
				s.ReadLeases = append(s.ReadLeases, Reader{ID: r.Listed[i+1], TTL: left})
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
		writers[i] = quorum.Reply[MutexNodeState]{V: MutexNodeState{Holder: r.V.Writer, TTL: r.V.TTL, Token: r.V.Token}, Err: r.Err}
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
	s.Locked, s.Writer, s.TTL, s.Token, s.Nodes = w.Locked, w.Holder, w.TTL, w.Token, w.Nodes
	for id, ttls := range readers {
		if len(ttls) >= m.c.q.Quorum {
			s.Readers = append(s.Readers, Reader{ID: id, TTL: quorum.MajorityHas(m.c.q.Quorum, ttls, func(d time.Duration) time.Duration { return d })})
		}
	}
	slices.SortFunc(s.Readers, func(a, b Reader) int { return cmp.Or(cmp.Compare(a.TTL, b.TTL), cmp.Compare(a.ID, b.ID)) })
	return s, nil
}

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
				n.Leases = append(n.Leases, PermitLease{Holder: id, TTL: time.Duration(ms) * time.Millisecond})
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
			st.Leases = append(st.Leases, PermitLease{Holder: ls[0].Holder, Permits: ls[0].Permits, TTL: ttl})
		}
	}
	slices.SortFunc(st.Leases, func(a, b PermitLease) int { return cmp.Or(cmp.Compare(a.TTL, b.TTL), cmp.Compare(a.Holder, b.Holder)) })
	return st, nil
}
