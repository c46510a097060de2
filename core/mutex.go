package core

import (
	"context"
	"crypto/rand"
	"errors"
	"time"
)

// Mutex is a distributed lock. Each successful Lock or TryLock returns a
// Lease, the handle of that one acquisition. A Mutex is safe for
// concurrent use and cheap: make one per name as needed.
type Mutex struct {
	c    *Client
	name string
	opts options
	keys keyNames
}

// Name returns the lock's name.
func (m *Mutex) Name() string { return m.name }

// TryLock makes one attempt. It returns ErrNotAcquired when another owner
// holds the lock and ErrNoQuorum when too few nodes answered.
func (m *Mutex) TryLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	l, _, err := m.attempt(ctx)
	return l, err
}

// Lock waits until the lock is acquired, ctx ends (its error is returned),
// or WithMaxAttempts attempts failed (ErrNotAcquired). It returns at once
// with ErrNoQuorum when a majority of nodes cannot be reached.
func (m *Mutex) Lock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	return acquire(ctx, m.c, &m.opts, m.keys.lock, m.attempt)
}

// acquire is the wait loop every blocking primitive shares: watch the key,
// then attempt and wait until done (see waiter.watch for why no release
// between an attempt and a wait is missed).
func acquire[L any](ctx context.Context, c *Client, o *options, key string, attempt func(context.Context) (L, time.Duration, error)) (L, error) {
	var zero L
	w, err := c.wait.watch(ctx, o, key)
	if err != nil {
		return zero, err
	}
	defer w.stop()
	for n := 0; ; n++ {
		l, holderTTL, err := attempt(ctx)
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
		if o.maxAttempts > 0 && n+1 >= o.maxAttempts {
			return zero, err
		}
		if err := w.wait(ctx, n, holderTTL); err != nil {
			return zero, err
		}
	}
}

// attempt runs one Redlock round: ask every node at once, count grants,
// and keep the lease only when a majority granted it and time is left.
// On failure it returns the holder's shortest remaining TTL as a hint.
func (m *Mutex) attempt(ctx context.Context) (*Lease, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	c, o := m.c, &m.opts
	holder := o.owner
	if holder == "" {
		holder = rand.Text()
	}
	start := time.Now()
	replies := fanout(ctx, c, o, func(ctx context.Context, _ int, n *node) (grant, error) {
		if o.owner != "" {
			r, err := n.d.MutexAcquireOwned(ctx, m.keys.lock, m.keys.fence, holder, o.ttl)
			return grant(r), err
		}
		r, err := n.d.MutexAcquire(ctx, m.keys.lock, m.keys.fence, holder, o.ttl)
		return grant(r), err
	})
	granted, fence, holderTTL := tally(replies)
	l := &Lease{m: m, holder: holder, fence: uint64(fence), done: make(chan struct{})}
	if granted >= c.quorum {
		if validity := o.ttl - time.Since(start) - o.driftAllowance(); validity > 0 {
			if len(c.nodes) == 1 || !o.fencing || l.makeFenceDurable(ctx, replies) {
				if validity = o.ttl - time.Since(start) - o.driftAllowance(); validity > 0 {
					l.start(start.Add(validity))
					return l, 0, nil
				}
			}
		}
	}
	l.cleanup(ctx, replies)
	if err := noQuorum(c, replies); err != nil {
		return nil, 0, err
	}
	return nil, holderTTL, ErrNotAcquired
}

// grant is one node's answer to an acquisition.
type grant struct {
	Acquired  bool
	Fence     int64
	HolderTTL time.Duration
}

// tally counts grants, takes the highest fencing counter among them, and
// the shortest remaining TTL among the nodes held by someone else.
func tally(replies []reply[grant]) (granted int, fence int64, holderTTL time.Duration) {
	holderTTL = -1
	for _, r := range replies {
		switch {
		case r.err != nil:
		case r.v.Acquired:
			granted++
			fence = max(fence, r.v.Fence)
		case r.v.HolderTTL >= 0 && (holderTTL < 0 || r.v.HolderTTL < holderTTL):
			holderTTL = r.v.HolderTTL
		}
	}
	return granted, fence, holderTTL
}
