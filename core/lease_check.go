package core

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

// Valid asks the servers, not the local clock, whether the lease still
// holds: whether a majority of nodes (the majority its acquisition needed)
// still hold its name with its token; every name, for a MultiLock, and
// all its permits, for a Semaphore lease. Use it right before a side
// effect that the resource cannot fence with Token. It costs one
// read-only command per node (per node and name, for a MultiLock) and
// writes nothing.
//
// When a majority no longer holds it, the lease is lost, as a failed
// Extend finds it: Done closes, Err returns ErrLost, and Valid returns
// false with a nil error. It returns ErrNoQuorum when too few nodes
// answered to tell (the lease is left as it was), and ErrNotHeld after
// Unlock.
func (l *Lease) Valid(ctx context.Context) (bool, error) {
	_, err := l.TTL(ctx)
	if errors.Is(err, ErrLost) {
		return false, nil
	}
	return err == nil, err
}

// TTL asks the servers how long the lease still holds, as Valid does: the
// remaining time that a majority of nodes still have (the quorum-th
// longest of the holding nodes'), less the allowance for clock drift that
// the acquisition keeps back, and never more than Until leaves. Once the
// lease is lost it returns 0 and ErrLost; its other errors are Valid's.
func (l *Lease) TTL(ctx context.Context) (time.Duration, error) {
	if l == nil {
		return 0, ErrNotHeld
	}
	if err := l.state(ctx); err != nil {
		return 0, err
	}
	until, replies, held := quorum.HeldUntil(ctx, l.c.q, l.opts.timing(), l.hold.left, func(d time.Duration) time.Duration { return d })
	if !until.IsZero() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err == nil && !time.Now().Before(l.until) {
			l.endLocked(l.lost())
		}
		if l.err != nil {
			return 0, l.err
		}
		return max(min(time.Until(until), time.Until(l.until)), 0), nil
	}
	if err := quorum.NoQuorum(ctx, l.c.q, replies); err != nil {
		return 0, err
	}
	if err := quorum.Unconfirmed(l.c.q, held); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(l.lost())
	return 0, l.err
}

// The holds' left report how long a node still holds the lease, reading
// what their extend lengthens; 0 when it does not hold it.

func (h mutexHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	if h.owned() {
		return n.Driver.OwnedTTL(ctx, h.keys.lock, h.holder)
	}
	return lockLeft(ctx, n, h.keys.lock, h.holder, h.forcedFlag)
}

func (h multiHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	var least time.Duration
	for j, mh := range h {
		r := quorum.RetryTransient(ctx, n, func(ctx context.Context) (time.Duration, error) { return mh.left(ctx, n) })
		if r.Err != nil || r.V <= 0 {
			return 0, r.Err
		}
		if j == 0 || r.V < least {
			least = r.V
		}
	}
	return least, nil
}

func (h fairHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	return lockLeft(ctx, n, h.keys.lock, h.token, h.forcedFlag)
}

func (h rwHold) left(ctx context.Context, n *quorum.Node) (time.Duration, error) {
	if h.read {
		return n.Driver.RWMutexReadTTL(ctx, h.keys.readers, h.token)
	}
	return lockLeft(ctx, n, h.keys.writer, h.token, h.forcedFlag)
}

func (h semaphoreHold) left(ctx context.Context, nd *quorum.Node) (time.Duration, error) {
	r, err := nd.Driver.SemaphoreTTL(ctx, h.keys.permits, h.keys.holders, h.ticket, h.token, h.n, h.slots)
	if r.ByID {
		h.heard(2)
	}
	return r.TTL, err
}

// lockLeft is how long token still holds the lock key on n, 0 when it
// does not or a force-release freed it (noted in f); a key that someone
// made persistent holds for as long as Until allows. Where a Cluster slot
// migrates and refuses a script over the lock and its forced marker, it
// reads the lock key alone, as an extension may.
func lockLeft(ctx context.Context, n *quorum.Node, lock, token string, f forcedFlag) (time.Duration, error) {
	ttl, err := n.Driver.LockTTL(ctx, lock, forcedKey(lock), token)
	if n.Cluster && driver.IsTryAgain(err) {
		ttl, err = n.Driver.LockTTL(ctx, lock, lock, token) // the marker unread (see lock_ttl.lua)
	}
	if f.heard(ttl.Milliseconds()) {
		return 0, err
	}
	if ttl < 0 {
		return math.MaxInt32 * time.Millisecond, err
	}
	return ttl, err
}
