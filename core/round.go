package core

import (
	"context"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"
)

// play runs the round r of an attempt under o at a lease of names (see
// quorum.Round), which hold(out) holds once the round is won; won, when
// not nil, runs then, before the lease starts. It returns the lease, nil
// unless the round was won.
func play[T any](ctx context.Context, c *Client, o *options, names leaseNames, r quorum.Round[T],
	hold func(quorum.Outcome[T]) hold, won func(ctx context.Context, l *Lease, replies []quorum.Reply[T], wins func(int) bool)) (*Lease, quorum.Played[T]) {
	r.Group, r.Timing, r.Acked = c.q, o.timing(), names.acked
	if !o.fencing {
		r.Durable = nil
	}
	r.Keep = func(ctx context.Context, out quorum.Outcome[T], replies []quorum.Reply[T], wins func(int) bool, until time.Time) quorum.Kept {
		l := newLease(c, names, *o, hold(out), uint64(out.Fence))
		if won != nil {
			won(ctx, l, replies, wins)
		}
		l.start(until)
		return l
	}
	p := r.Play(ctx)
	l, _ := p.Kept.(*Lease)
	return l, p
}

// leaseNames are the names a lease holds (a MultiLock's several), and the
// keys whose replicas must take its grants (see WithReplicaAcks).
type leaseNames struct {
	names []string
	acked []string
}

func newLeaseNames(o options, names ...string) leaseNames {
	ln := leaseNames{names: names}
	for _, name := range names {
		ln.acked = append(ln.acked, key(o, name, ackedSuffix))
	}
	return ln
}

// ackedSuffix is the suffix of a name's acked key.
const ackedSuffix = ":acked"

func (ln leaseNames) String() string { return strings.Join(ln.names, ",") }
