package core

import "context"

// DrainPermits takes every permit free now, at most MaxSemaphoreAcquire,
// in one attempt, as one lease, and returns it with the number of permits
// it holds; it costs what a TryAcquire of as many does. Like TryAcquire it
// does not wait, and takes nothing while waiters wait in line. When none
// is free it returns ErrNotAcquired, as TryAcquire does, so that a nil
// lease never comes with a nil error; with a quorum, also when the nodes
// of no majority have the same permits free (while leases hold theirs on
// different majorities). Its other errors are TryAcquire's.
func (s *Semaphore) DrainPermits(ctx context.Context) (*Lease, int, error) {
	if err := s.check(ctx, 1); err != nil {
		return nil, 0, err
	}
	a := s.opts.acquiring(ctx, s.name, false)
	a.attempt()
	l, _, err := s.attempt(ctx, -MaxSemaphoreAcquire, nil)
	if l, err = a.done(l, err); err != nil {
		return nil, 0, err
	}
	return l, int(l.hold.(semaphoreHold).n), nil
}
