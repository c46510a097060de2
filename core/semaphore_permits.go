package core

import (
	"context"

	"github.com/redlockgo/redlock/internal/quorum"
)

// TrySetPermits stores the number of permits as SetPermits does, but only
// if none is stored yet, and reports whether it stored it. The number
// given to Client.Semaphore is never stored: a semaphore has no number set
// until SetPermits, TrySetPermits or AddPermits stores one, or again once
// a stored number lapsed (WithIdleExpiry after the semaphore's last use).
// It costs one script call per node, and returns true when a majority of
// nodes stored it; false when a majority answered but fewer stored it,
// the others having a number already (where it did store it, it stays:
// SetPermits makes every node alike). It returns ErrInvalid, writing
// nothing, for a number below 1 or above MaxSemaphorePermits, and
// ErrNoQuorum when too few nodes answered. Where it stores the number, a
// node also keeps a small mark of the call for WithIdleExpiry (10 minutes
// by default), so that a copy of its request that the network delivers
// meanwhile (a client that resends it on a broken connection) still
// answers that the call stored it. Calling TrySetPermits again after
// ErrNoQuorum makes a new call, which answers false where the first one's
// requests stored the number.
func (s *Semaphore) TrySetPermits(ctx context.Context, permits int) (bool, error) {
	if err := s.c.check(ctx, s.name, &s.opts); err != nil {
		return false, err
	}
	if permits <= 0 || int64(permits) > MaxSemaphorePermits {
		return false, invalid("TrySetPermits(%d) on semaphore %q: the number of permits must be from 1 to MaxSemaphorePermits", permits, s.name)
	}
	call := s.keys.newCall()
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		return nd.Driver.SemaphoreTrySetPermits(ctx, s.keys.size, s.keys.queue, call, int64(permits), s.opts.idle)
	})
	if quorum.Held(replies) >= s.c.q.Quorum {
		return true, nil
	}
	return false, quorum.NoQuorum(ctx, s.c.q, replies)
}

// AddPermits adds delta permits to the number in force (the stored one,
// or the one given to Client.Semaphore while none is stored) and stores
// the sum, in one script call per node; a negative delta takes permits
// away.
// A raise wakes the waiter first in line, as a release does. A lowering
// revokes nothing: leases keep their permits, and new acquisitions wait
// until enough are released or expire. It returns ErrInvalid, writing
// nothing, for a delta of 0 or one that would leave fewer than 1 or more
// than MaxSemaphorePermits permits, and ErrNoQuorum when fewer than a
// majority applied it.
// Each call adds at most once on each node: where it adds, the node keeps
// a small mark of the call for WithIdleExpiry (10 minutes by default), and
// a copy of its request that the network delivers meanwhile (a client that
// resends it on a broken connection) adds nothing, and answers as the call
// did. Calling AddPermits again after ErrNoQuorum makes a new call, which
// adds again wherever the first one's requests landed or still land; so
// call it again only where adding twice is harmless, and otherwise use
// SetPermits, which stores a number.
func (s *Semaphore) AddPermits(ctx context.Context, delta int) error {
	if err := s.check(ctx, 1); err != nil {
		return err
	}
	if delta == 0 || int64(delta) > MaxSemaphorePermits || int64(delta) < -MaxSemaphorePermits {
		return invalid("AddPermits(%d) on semaphore %q: add from -MaxSemaphorePermits to MaxSemaphorePermits, not 0", delta, s.name)
	}
	call := s.keys.newCall()
	replies := quorum.Fanout(ctx, s.c.q, s.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		total, err := nd.Driver.SemaphoreAddPermits(ctx, s.keys.size, s.keys.queue, call, int64(delta), int64(s.permits), s.opts.idle)
		return total > 0, err
	})
	if quorum.Held(replies) >= s.c.q.Quorum {
		return nil
	}
	if err := quorum.NoQuorum(ctx, s.c.q, replies); err != nil {
		return err
	}
	return invalid("AddPermits(%d) on semaphore %q would leave fewer than 1 or more than MaxSemaphorePermits permits; read the number with State", delta, s.name)
}
