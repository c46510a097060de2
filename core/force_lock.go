package core

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"
)

// ForceLock takes the lock from whoever holds it, on every node at once,
// with a fencing token higher than the former holder's, and returns its
// lease; the line of waiters stays as it is, and the lease's Unlock hands
// the lock on to it as any release does. It is an operator's tool, as
// ForceUnlock is, and breaks mutual exclusion by design: the former
// holder may go on working until its next Extend or Unlock, which returns
// ErrLost saying that it was force-released (with WithAutoExtend, its
// watchdog closes Done, Err saying so), and only fencing tokens, checked
// by the resource, keep its late writes out.
//
// It reads each node's holder, as State does, then asks each node to swap
// that holder, and only that one, for the new lease: a copy or retry of
// the request that lands once the name changed hands takes nothing, and
// one that finds this lease writes nothing. A copy that lands once the
// name is free again, as it was when read, takes it as a late TryLock
// does: for at most the TTL, as a lease that nobody has. When the holder
// changes between the read and the swap on too many nodes, it reads
// again, a few times, then returns ErrNotAcquired saying so. It returns
// ErrInvalid, writing nothing, for a Mutex with an owner (WithOwner) or a
// name that an owner holds (ForceUnlock it first); else the errors of
// TryLock. It costs two round trips, and a third to make the token
// durable where the nodes drew different ones.
func (m *Mutex) ForceLock(ctx context.Context) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	if m.opts.owner != "" {
		return nil, invalid("ForceLock takes a plain lock: use a Mutex without WithOwner")
	}
	o, k := &m.opts, m.keys
	h := m.hold(rand.Text()) // one token for every try: a late request of an earlier try is then its own
	h.mark = line.RandomKey(k.noTicket)
	durable := func(ctx context.Context, replies []quorum.Reply[grant], _ func(int) bool, fence int64) bool {
		return h.makeFenceDurable(ctx, m.c, o, replies, fence)
	}
	for range forceLockTries {
		seen := quorum.Fanout(ctx, m.c.q, o.timing(), func(ctx context.Context, _ int, n *quorum.Node) (driver.MutexStateReply, error) {
			return n.Driver.MutexState(ctx, k.lock, k.fence, k.queue)
		})
		if err := quorum.NoQuorum(ctx, m.c.q, seen); err != nil {
			return nil, err
		}
		if i := slices.IndexFunc(seen, func(r quorum.Reply[driver.MutexStateReply]) bool { return r.Err == nil && r.V.Owned }); i >= 0 {
			return nil, invalid("ForceLock takes a plain lock, and owner %q holds %q: ForceUnlock it first", seen[i].V.Holder, m.name)
		}
		swap := func(ctx context.Context, i int, n *quorum.Node) (grant, error) {
			if seen[i].Err != nil {
				return grant{}, seen[i].Err
			}
			fence, err := n.Driver.MutexForceLock(ctx, driver.MutexForceLockRequest{Lock: k.lock, Fence: k.fence, Forced: forcedKey(k.lock), Token: h.holder, Holder: seen[i].V.Holder, TTL: o.ttl, Idle: o.idle})
			return grant{Acquired: err == nil && fence > 0, Fence: fence}, err
		}
		l, _, err := grantRound(ctx, m.c, o, m.names, h, h, false, swap, durable)
		if !errors.Is(err, ErrNotAcquired) {
			return l, err
		}
	}
	return nil, errHolderKeptChanging
}

// forceLockTries is how many times ForceLock reads the holders and swaps.
const forceLockTries = 3

// errHolderKeptChanging is ForceLock's ErrNotAcquired once every try
// found another holder than it read on too many nodes.
var errHolderKeptChanging = fmt.Errorf("%w: the holder kept changing between ForceLock's read and its swap; call ForceLock again", ErrNotAcquired)
