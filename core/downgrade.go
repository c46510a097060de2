package core

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

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
// get in.
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
	select {
	case l.extending <- struct{}{}:
		defer func() { <-l.extending }()
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
