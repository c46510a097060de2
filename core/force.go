package core

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

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
	if isToken(id) {
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
		v, err := nd.Driver.SemaphoreRelease(ctx, driver.SemaphoreReleaseRequest{Permits: k.permits, Holders: k.holders, Queue: k.queue, Ticket: k.mark(holder), Token: holder, N: maxPermitsInID, Left: s.opts.ttl, ByID: forcedByHolder})
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

// force runs a force-release on every node at once.
func force(ctx context.Context, c *Client, o *options, op func(ctx context.Context, nd *quorum.Node) (int64, error)) error {
	replies := quorum.Fanout(ctx, c.q, o.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (int64, error) {
		return op(ctx, nd)
	})
	return quorum.NoQuorum(ctx, c.q, replies)
}

// forcedKey is the forced marker of a lock key: the tokens whose hold a
// force-release freed, for as long as each had left (see lib/forced.lua).
func forcedKey(lock string) string { return lock + forcedSuffix }

const forcedSuffix = ":forced"

// errForced is the ErrLost of a lease whose hold a force-release freed.
var errForced = fmt.Errorf("%w (an operator force-released it with ForceUnlock or ForceLock; it did not expire)", ErrLost)

// forcedFlag is set once a node answered that a force-release freed the
// lease's hold; the hold's copies share it.
type forcedFlag struct{ p *atomic.Bool }

func newForcedFlag() forcedFlag { return forcedFlag{new(atomic.Bool)} }

// heard notes v, a script's answer, and reports whether it says that a
// force-release freed the hold.
func (f forcedFlag) heard(v int64) bool {
	if v != leaseForced {
		return false
	}
	if f.p != nil {
		f.p.Store(true)
	}
	return true
}

// lostWhy is errForced once a node said that a force-release freed the
// hold; else nil.
func (f forcedFlag) lostWhy() error {
	if f.p != nil && f.p.Load() {
		return errForced
	}
	return nil
}

// askForced asks n, after a release found the lock not token's, whether a
// force-release freed token's hold, and notes it in f; a failed ask
// leaves f as it was (the release still found nothing).
func (f forcedFlag) askForced(ctx context.Context, n *quorum.Node, lock, token string) {
	if forced, err := n.Driver.WasForced(ctx, forcedKey(lock), token); err == nil && forced {
		f.heard(leaseForced)
	}
}
