package core

import (
	"context"
	"errors"
	"slices"
	"time"
)

// round is one Redlock acquisition round, the part every primitive's
// attempt shares: ask every node at once (a vote, which a stalled
// minority does not hold up), count what a majority granted, keep the
// lease when validity is left after making its fencing token durable,
// and otherwise undo the attempt wherever it may have landed. A node that
// had not answered when the vote was decided is undone when its answer
// comes, unless its grant is part of a lease that still holds.
// A primitive's attempt says what to ask, how to read the answers and
// what undoes them.
type round[T any] struct {
	c     *Client
	o     *options
	names []string // the primitive's: a MultiLock's several
	ask   func(ctx context.Context, i int, n *node) (T, error)
	// granted is a node's answer that counts toward the vote; agree,
	// when not nil, says what it granted, when grants must agree.
	granted func(T) bool
	agree   func(T) int64
	// count reads the answers once the vote is in.
	count func([]reply[T]) outcome[T]
	// hold is the hold of the lease the outcome describes.
	hold func(outcome[T]) hold
	// mayHold reports whether a node may hold what it was asked: it
	// granted something, or its call failed (which may have landed).
	mayHold func(reply[T]) bool
	// undo takes back on n what its answer r says it may hold.
	undo func(ctx context.Context, n *node, r reply[T]) (bool, error)
	// durable makes a won round's fencing token durable on the nodes
	// that won (see the package documentation); nil when the lease has
	// no exclusive token to protect. It runs only with fencing on.
	durable func(ctx context.Context, replies []reply[T], wins func(int) bool, fence int64) bool
	// voted, when not nil, sees the answers as soon as the vote is in;
	// those not in yet are errNoAnswerYet.
	voted func([]reply[T])
	// won, when not nil, runs once the lease is held, before it is
	// returned.
	won func(ctx context.Context, l *Lease, replies []reply[T], wins func(int) bool)
}

// outcome is what a round's answers say.
type outcome[T any] struct {
	// wins tells the answers that hold the lease the round counts.
	wins func(reply[T]) bool
	// fence is the lease's fencing token: the highest the winners drew.
	fence int64
	// hint is how long until the holders' hold ends, for the wait after
	// a failed round; -1 when unknown.
	hint time.Duration
}

// played is a round's result.
type played[T any] struct {
	lease   *Lease // nil unless err is nil
	hint    time.Duration
	err     error
	replies []reply[T]
	// unsure is true when something of the attempt may still land: an
	// undo failed, or a node had not answered. A waiter that reuses its
	// token then takes a fresh one, so that it cannot undo a later grant.
	unsure bool
}

// play runs the round.
func (r round[T]) play(ctx context.Context) played[T] {
	if err := ctx.Err(); err != nil {
		return played[T]{err: err}
	}
	c, o := r.c, r.o
	if c.closed.Load() {
		return played[T]{err: ErrClosed}
	}
	start := time.Now()
	// A late answer is undone if the round failed, if the lease has
	// ended by then, or if it says it holds something else than the
	// lease (a Semaphore's other slots): an undo sent before the answer
	// could land first, and a grant that lands after the lease's release
	// would hold that node until its TTL. A late failure under a lease
	// that holds may hold the lease's own hold, which its release takes.
	var (
		decided = make(chan struct{})
		held    bool
		out     outcome[T]
		l       *Lease
	)
	defer close(decided)
	replies := vote(ctx, c, o, r.ask, ballot[T]{yes: r.granted, agree: r.agree, splitFails: true, late: func(i int, late reply[T]) {
		if <-decided; r.mayHold(late) && (!held || l.Err() != nil || late.err == nil && !out.wins(late)) {
			// Asked again until it lands, as a failed undo below is.
			undo := func(ctx context.Context, on func(int) bool) []reply[bool] {
				return detached(ctx, c, o, func(ctx context.Context, j int, n *node) (bool, error) {
					if j != i || !on(j) {
						return false, nil
					}
					return r.undo(ctx, n, late)
				})
			}
			bg := context.WithoutCancel(ctx)
			leaveAgain(bg, c, o.ttl, undo(bg, everyNode), undo)
		}
	}})
	if r.voted != nil {
		r.voted(replies)
	}
	out = r.count(replies)
	wins := func(i int) bool { return out.wins(replies[i]) }
	l = newLease(c, r.names, *o, r.hold(out), uint64(out.fence))
	if r.valid(ctx, start, replies, out, wins) {
		if until, ok := o.validUntil(start, o.ttl); ok {
			held = true
			if r.won != nil {
				r.won(ctx, l, replies, wins)
			}
			l.start(until)
			return played[T]{lease: l, replies: replies, unsure: slices.ContainsFunc(replies, stillOut[T])}
		}
	}
	// The error is the round's, before the undo: an undo that waits out
	// ctx for a stalled node does not make a refusal ctx's doing.
	err := notWon(ctx, c, replies)
	// Undo wherever the attempt may have landed; a node still out is
	// undone when it answers (above). A refusal wrote nothing.
	undo := func(ctx context.Context, on func(int) bool) []reply[bool] {
		return detached(ctx, c, o, func(ctx context.Context, i int, n *node) (bool, error) {
			if !on(i) || stillOut(replies[i]) || !r.mayHold(replies[i]) {
				return false, nil
			}
			return r.undo(ctx, n, replies[i])
		})
	}
	undone := undo(ctx, everyNode)
	// An undo that failed may not have landed: it is asked again, in the
	// background, as a leave is (leaveAgain), or what the attempt took
	// there would stay until its TTL. A waiter gives its token up after
	// such an undo (unsure), so the second one takes back only what this
	// attempt took.
	leaveAgain(ctx, c, o.ttl, undone, undo)
	p := played[T]{hint: out.hint, err: err, replies: replies, unsure: slices.ContainsFunc(replies, stillOut[T]) ||
		slices.ContainsFunc(undone, func(u reply[bool]) bool { return u.err != nil })}
	if c.closed.Load() { // closed while the round was out: its errors are Close's doing
		p.err = ErrClosed
	}
	if !errors.Is(p.err, ErrNotAcquired) {
		p.hint = 0
	}
	return p
}

// valid reports whether a majority won the round with validity left,
// once its fencing token is durable, and on the nodes' replicas.
func (r round[T]) valid(ctx context.Context, start time.Time, replies []reply[T], out outcome[T], wins func(int) bool) bool {
	if count(len(replies), wins) < r.c.quorum {
		return false
	}
	if _, ok := r.o.validUntil(start, r.o.ttl); !ok {
		return false
	}
	if r.o.fencing && r.durable != nil && !r.durable(ctx, replies, wins, out.fence) {
		return false
	}
	// A grant that its node's replicas did not take is that node's
	// failure: it no longer wins, and is undone with the rest if the
	// round fails.
	for i, err := range notOnReplicas(ctx, r.c, r.o, r.names, wins) {
		if err != nil {
			replies[i].err = err
		}
	}
	return count(len(replies), wins) >= r.c.quorum
}

// count is how many of the nodes 0..n-1 are in on.
func count(n int, on func(int) bool) int {
	k := 0
	for i := range n {
		if on(i) {
			k++
		}
	}
	return k
}

// stillOut reports a node that a vote did not wait for.
func stillOut[T any](r reply[T]) bool { return errors.Is(r.err, errNoAnswerYet) }
