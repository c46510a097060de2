package core

import (
	"context"
	"errors"
	"time"
)

// ExtendOrRetake extends a plain Mutex's lease as Extend does, and when the
// lease has been lost (its keys expired or were deleted, its validity ran
// out) while its name is free, takes the name again as TryLock does. It
// returns the lease that holds the name: l itself when l was extended, or
// a new Lease when the name was retaken. A retake is a new acquisition: the
// new Lease has a new ID and a higher Token, and l stays lost, so compare
// them:
//
//	next, err := lease.ExtendOrRetake(ctx, ttl)
//	if err == nil && next != lease {
//		// Retaken: another holder may have come and gone between the two,
//		// so check what the lock protects, and send next.Token() from now on.
//	}
//
// The retake releases what is left of the lost hold first (the nodes
// where its keys remain), as Unlock would, and runs as a TryLock of the
// Mutex with a TTL of ttl and the lease's other options. When another
// holder has the name, it returns ErrLost, as Extend does; ErrNoQuorum,
// ErrUnavailable and ErrReplicasBehind as TryLock does, and when l was
// not lost, Extend's errors (after ErrNoQuorum l stays valid until
// Until). It returns ErrNotHeld after Unlock, and ErrInvalid, writing
// nothing, for a lease that is not a plain Mutex's (a reentrant one's,
// WithOwner, a FairMutex's, an RWMutex's, a Semaphore's or a MultiLock's).
// The watchdog of WithAutoExtend calls Extend, never this: a lease it
// keeps ends when lost.
func (l *Lease) ExtendOrRetake(ctx context.Context, ttl time.Duration) (*Lease, error) {
	if l == nil {
		return nil, ErrNotHeld
	}
	h, ok := l.hold.(mutexHold)
	if !ok || h.owned() {
		return nil, invalid("ExtendOrRetake takes a plain Mutex's lease, and the lease of %q is not one; use Extend", l.name)
	}
	lost := l.Extend(ctx, ttl)
	switch {
	case lost == nil:
		return l, nil
	case !errors.Is(lost, ErrLost):
		return nil, lost
	}
	// Unlock of a lost lease still deletes its keys where they remain,
	// which would refuse the retake there; after an Unlock by the caller
	// it returns ErrNotHeld, and nothing is retaken.
	if err := l.Unlock(ctx); !errors.Is(err, ErrLost) {
		return nil, err
	}
	m := &Mutex{c: l.c, name: l.name, names: l.names, opts: l.opts, keys: h.keys}
	m.opts.ttl = ttl
	next, err := m.TryLock(ctx)
	if errors.Is(err, ErrNotAcquired) {
		return nil, lost
	}
	return next, err
}
