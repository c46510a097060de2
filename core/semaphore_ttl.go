package core

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"
)

// TTL returns how long the permits with permit ID id are still held, from
// any Client, as Lease.TTL reads it: the time a majority of nodes still
// hold all of them, less the allowance for clock drift. It writes nothing.
// It returns ErrNotHeld when they expired or were released, ErrNoQuorum
// when too few nodes answered, and ErrInvalid when id is not a permit ID.
func (s *Semaphore) TTL(ctx context.Context, id string) (time.Duration, error) {
	h, err := s.holdOf(ctx, id)
	if err != nil {
		return 0, err
	}
	o := s.opts
	o.ttl = h.ttl // the drift allowance is the acquisition's
	until, replies, _ := quorum.HeldUntil(ctx, s.c.q, o.timing(), h.left, func(d time.Duration) time.Duration { return d })
	if !until.IsZero() {
		return max(time.Until(until), 0), nil
	}
	if err := quorum.NoQuorum(ctx, s.c.q, replies); err != nil {
		return 0, err
	}
	return 0, ErrNotHeld
}
