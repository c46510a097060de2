package core

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"
)

// Resume returns a Lease for the hold of this lock whose Lease.ID is id,
// taken by this or another process: a worker that hands its job on hands
// the ID on, and the next one extends or releases the lock with it. It
// checks on the servers that a majority of nodes hold the name with id
// now, and writes nothing. The Lease's Until is the remaining time that a
// majority still have (as Lease.TTL reads it), less the allowance for
// clock drift of this Mutex's TTL; its Extend, Unlock, Valid, TTL and Done
// work as on the original, which keeps working too: an Unlock through
// either releases the lock, and the other learns it at its next Extend
// or check (or at Until). Its Token is the fencing token of the hold,
// read from the name's fencing counter, or 0 when fewer than a majority
// of the holding nodes still keep it there (the counter expires
// WithIdleExpiry after its last draw, also while a lease holds the name).
//
// What holds the name with id may be a late copy of the original's
// acquisition, landed after its Unlock or ForceUnlock (see SAFETY.md):
// Resume then returns a lease for that hold, exclusive as any, whose
// Token is the copy's, higher than the original's; the original lease
// stays ended.
//
// It returns ErrNotHeld when id does not hold the name on a majority
// (released, expired, or another holder's now), ErrNoQuorum when too few
// nodes answered to tell, and ErrInvalid, writing nothing, when id is not
// a Mutex lease's ID or the Mutex is reentrant (WithOwner: an owner's
// leases are resumed by taking the lock again as that owner). It costs a
// read-only script per node.
func (m *Mutex) Resume(ctx context.Context, id string) (*Lease, error) {
	if err := m.c.check(ctx, m.name, &m.opts); err != nil {
		return nil, err
	}
	if m.opts.owner != "" {
		return nil, invalid("Resume takes a plain lock's lease ID, and %q is reentrant (WithOwner(%q)): lock it again as that owner instead", m.name, m.opts.owner)
	}
	if !isLeaseID(id) {
		return nil, invalid("%q is not the ID of a Mutex lease: pass the Lease.ID of one of the leases of %q", id, m.name)
	}
	type holding struct {
		left  time.Duration
		fence uint64
	}
	k := m.keys
	until, replies, held := quorum.HeldUntil(ctx, m.c.q, m.opts.timing(), func(ctx context.Context, n *quorum.Node) (holding, error) {
		r, err := n.Driver.MutexState(ctx, k.lock, k.fence, k.queue)
		switch {
		case err != nil || r.Owned || r.Holder != id:
			return holding{}, err
		case r.TTL < 0: // made persistent: it holds for as long as Until allows
			r.TTL = math.MaxInt32 * time.Millisecond
		}
		return holding{left: r.TTL, fence: uint64(max(r.Fence, 0))}, nil
	}, func(h holding) time.Duration { return h.left })
	if until.IsZero() {
		if err := quorum.NoQuorum(ctx, m.c.q, replies); err != nil {
			return nil, err
		}
		if err := quorum.Unconfirmed(m.c.q, held); err != nil {
			return nil, err
		}
		return nil, ErrNotHeld
	}
	if !time.Now().Before(until) {
		return nil, ErrNotHeld
	}
	// The lease's round left its token on a majority of the nodes that
	// hold it, and no draw moves a counter while the name is held there.
	fence, _ := quorum.MajorityNames(m.c.q.Quorum, replies, func(r quorum.Reply[holding]) uint64 {
		if r.Err != nil || r.V.left <= 0 {
			return 0
		}
		return r.V.fence
	})
	l := newLease(m.c, m.names, m.opts, m.hold(id), fence)
	l.start(until)
	return l, nil
}

// isLeaseID reports whether id has the form of a plain Mutex lease's ID: a
// token from crypto/rand.Text, followed, for a waiter's under Notify, by
// the number of its token (see line.Ticket.Rotate).
func isLeaseID(id string) bool {
	const most = 20 // digits: more than a waiter ever rotates
	return len(id) >= 26 && len(id) <= 26+most && isToken(id[:26]) && strings.Trim(id[26:], "0123456789") == ""
}
