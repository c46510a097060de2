package core

import (
	"context"
	"crypto/rand"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

// ForceLock takes the lock whoever holds it, on every node at once, with a
// fencing token higher than every one drawn before, and returns its
// lease; the line of waiters stays as it is, and the lease's Unlock hands
// the lock on to it as any release does. It is an operator's tool, as
// ForceUnlock is, and breaks mutual exclusion by design: the former
// holder's next Extend or Unlock returns ErrLost saying that it was
// force-released (an owner's lease's does not say why), and only fencing
// tokens, checked by the resource, keep its late writes out. It returns
// ErrInvalid, writing nothing, for a Mutex with an owner (WithOwner);
// else the errors of TryLock but ErrNotAcquired.
func (m *Mutex) ForceLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	if m.opts.owner != "" {
		return nil, invalid("ForceLock takes a plain lock: use a Mutex without WithOwner")
	}
	o := &m.opts
	h := m.hold(rand.Text())
	// Its own ticket, marked as the request lands: a copy is refused (see
	// mutex_force_lock.lua), and extensions keep the mark.
	h.mark = h.keys.noTicket + rand.Text()
	k := h.keys
	p := quorum.Round[grant]{
		Ask: func(ctx context.Context, _ int, n *quorum.Node) (grant, error) {
			fence, err := n.Driver.MutexForceLock(ctx, driver.MutexForceLockRequest{Lock: k.lock, Fence: k.fence, Forced: forcedKey(k.lock), Ticket: h.mark, Token: h.holder, TTL: o.ttl, Idle: o.idle})
			return grant{Acquired: err == nil && fence > 0, Fence: fence}, err
		},
		Granted: acquired, Tally: countGrants, MayHold: mayHoldGrant,
		Undo: func(ctx context.Context, n *quorum.Node, _ quorum.Reply[grant]) (bool, error) {
			return h.release(ctx, n)
		},
		Durable: func(ctx context.Context, replies []quorum.Reply[grant], _ func(int) bool, fence int64) bool {
			return h.makeFenceDurable(ctx, m.c, o, replies, fence)
		},
	}
	l, r := play(ctx, m.c, o, m.names, p, func(quorum.Outcome[grant]) hold { return h }, nil)
	return l, r.Err
}
