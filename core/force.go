package core

import (
	"context"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

// The force-releases are operator tools, for a holder that is stuck: they
// free a name whoever holds it, which breaks mutual exclusion by design.
// The former holder may still be working on the resource until it next
// extends or unlocks (ErrLost) or its watchdog (WithAutoExtend) closes
// Done, within one watchdog interval; only fencing tokens (Lease.Token),
// checked by the resource, keep its late writes out. Each runs on every
// node at once and hands the name on to the next waiter as a release
// does. It returns nil when a majority of nodes answered, the name then
// free there or handed on (a name that was free is no error), and
// ErrNoQuorum, with the nodes' errors, when too few did.

// ForceUnlock frees the lock whoever holds it, a plain lease or an
// owner's leases, and hands it on to the oldest waiter. It breaks mutual
// exclusion: see the fencing tokens in the package documentation.
func (m *Mutex) ForceUnlock(ctx context.Context) error {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return err
	}
	k, o := m.keys, &m.opts
	return force(ctx, m.c, o, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		return nd.Driver.MutexForce(ctx, k.lock, k.fence, k.queue, o.reserve(), o.idle)
	})
}

// ForceUnlock frees the fair lock whoever holds it and grants it to the
// waiter first in line. It breaks mutual exclusion: see the fencing tokens
// in the package documentation.
func (m *FairMutex) ForceUnlock(ctx context.Context) error {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return err
	}
	k, o := m.keys, &m.opts
	return force(ctx, m.c, o, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		return nd.Driver.FairMutexForce(ctx, driver.FairMutexForceRequest{Lock: k.lock, Fence: k.fence, Queue: k.queue, Lapse: k.lapse, Tickets: k.tickets, Idle: o.idle, Left: o.ttl})
	})
}

// ForceUnlock frees the lock from its writer and every reader, and grants
// it to the first waiting writer, or else wakes the waiting readers. It
// breaks mutual exclusion: see the fencing tokens in the package
// documentation.
func (m *RWMutex) ForceUnlock(ctx context.Context) error {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return err
	}
	k, o := m.keys, &m.opts
	return force(ctx, m.c, o, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		return nd.Driver.RWMutexForce(ctx, driver.RWMutexForceRequest{Writer: k.writer, Readers: k.readers, Writers: k.writers, Waiting: k.waiting, Tickets: k.tickets, Fence: k.fence, Idle: o.idle, Left: o.ttl})
	})
}

// ForceRelease gives back the permits of one lease, whoever holds them,
// and wakes the waiter first in line. id is the lease's permit ID
// (Lease.ID) or the Holder that State lists for it. The lease's next
// Extend or Unlock returns ErrLost. It breaks the bound on permits held:
// see the fencing tokens in the package documentation. It returns
// ErrInvalid, writing nothing, when id is neither.
func (s *Semaphore) ForceRelease(ctx context.Context, id string) error {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return err
	}
	h, err := s.holdOf(ctx, id)
	if isToken(id) {
		// All of the holder's permits, however many: the release reads
		// the holder's list of slots on each node.
		h, err = semaphoreHold{keys: s.keys, token: id, n: maxPermitsInID, ticket: s.keys.mark(id), ttl: s.opts.ttl, byPermitID: true}, nil
	}
	if err != nil {
		return err
	}
	return force(ctx, s.c, &s.opts, func(ctx context.Context, nd *quorum.Node) (int64, error) {
		_, err := h.release(ctx, nd)
		return 0, err
	})
}

// force runs a force-release on every node at once.
func force(ctx context.Context, c *Client, o *options, op func(ctx context.Context, nd *quorum.Node) (int64, error)) error {
	replies := quorum.Fanout(ctx, c.q, o.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (int64, error) {
		return op(ctx, nd)
	})
	return quorum.NoQuorum(ctx, c.q, replies)
}
