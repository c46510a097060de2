package core

import "context"

// DrainPermits takes every permit free now, at most MaxSemaphoreAcquire,
// in one attempt, as one lease, and returns it with the number of permits
// it holds. Like TryAcquire it does not wait, and takes nothing while
// waiters wait in line. It returns ErrNotAcquired when no permit is free
// (or, with a quorum, when no majority of nodes has the same ones free),
// and TryAcquire's other errors.
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
