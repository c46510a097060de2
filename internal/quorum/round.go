package quorum

import (
	"context"
	"errors"
	"slices"
	"time"
)

// Round is one Redlock acquisition round, the part every primitive's
// attempt shares: ask every node at once (a vote, which a stalled
// minority does not hold up), count what a majority granted, keep the
// lease when validity is left after making its fencing token durable,
// and otherwise undo the attempt wherever it may have landed. A node that
// had not answered when the vote was decided is undone when its answer
// comes, unless its grant is part of a lease that still holds.
// A primitive's attempt says what to ask, how to read the answers and
// what undoes them.
type Round[T any] struct {
	Group  *Group
	Timing Timing
	// Acked are the keys whose replicas must take a grant (see
	// NotOnReplicas): one per name the lease holds.
	Acked []string
	Ask   func(ctx context.Context, i int, n *Node) (T, error)
	// Granted is a node's answer that counts toward the vote; Agree,
	// when not nil, says what it granted, when grants must agree.
	Granted func(T) bool
	Agree   func(T) int64
	// Tally reads the answers once the vote is in.
	Tally func([]Reply[T]) Outcome[T]
	// MayHold reports whether a node may hold what it was asked: it
	// granted something, or its call failed (which may have landed).
	MayHold func(Reply[T]) bool
	// Undo takes back on n what its answer r says it may hold.
	Undo func(ctx context.Context, n *Node, r Reply[T]) (bool, error)
	// Durable makes a won round's fencing token durable on the nodes
	// that won; nil when there is no exclusive token to protect, or
	// fencing is off.
	Durable func(ctx context.Context, replies []Reply[T], wins func(int) bool, fence int64) bool
	// Voted, when not nil, sees the answers as soon as the vote is in;
	// those not in yet are StillOut.
	Voted func([]Reply[T])
	// Keep runs once the round is won, valid until until: it starts the
	// lease and returns it, for the answers that come late to ask whether
	// it has ended since.
	Keep func(ctx context.Context, out Outcome[T], replies []Reply[T], wins func(int) bool, until time.Time) Kept
}

// Kept is what a won round keeps: the primitive's lease, whose Err is not
// nil once it has ended.
type Kept interface{ Err() error }

// Outcome is what a round's answers say.
type Outcome[T any] struct {
	// Wins tells the answers that hold the lease the round counts.
	Wins func(Reply[T]) bool
	// Fence is the lease's fencing token: the highest the winners drew.
	Fence int64
	// Hint is how long until the holders' hold ends, for the wait after
	// a failed round; -1 when unknown.
	Hint time.Duration
}

// Played is a round's result.
type Played[T any] struct {
	Won     bool // Keep ran; Err is nil
	Kept    Kept // what Keep returned
	Hint    time.Duration
	Err     error
	Replies []Reply[T]
	// Unsure is true when something of the attempt may still land: an
	// undo failed, or a node had not answered. A waiter that reuses its
	// token then takes a fresh one, so that it cannot undo a later grant.
	Unsure bool
}

// Play runs the round.
func (r Round[T]) Play(ctx context.Context) Played[T] {
	if err := ctx.Err(); err != nil {
		return Played[T]{Err: err}
	}
	g, tm := r.Group, r.Timing
	if g.Closed() {
		return Played[T]{Err: ErrClosed}
	}
	start := time.Now()
	// A late answer is undone if the round failed, if the lease has
	// ended by then, or if it says it holds something else than the
	// lease (a Semaphore's other slots): an undo sent before the answer
	// could land first, and a grant that lands after the lease's release
	// would hold that node until its TTL. A late failure under a lease
	// that holds may hold the lease's own hold, which its release takes.
	var v struct { // what the late answers read, one allocation for both
		kept Kept // set once the round is won
		out  Outcome[T]
	}
	ballot := Ballot[T]{Yes: r.Granted, Agree: r.Agree, SplitFails: true}
	if len(g.Nodes) > 1 { // a vote on one node waits for its answer: none comes late
		decided := make(chan struct{})
		defer close(decided)
		ballot.Late = func(i int, late Reply[T]) {
			if <-decided; r.MayHold(late) && !neverSent(late.Err) && (v.kept == nil || v.kept.Err() != nil || late.Err == nil && !v.out.Wins(late)) {
				// Asked again until it lands, as a failed undo below is.
				undo := func(ctx context.Context, on func(int) bool) []Reply[bool] {
					return Detached(ctx, g, tm, func(ctx context.Context, j int, n *Node) (bool, error) {
						if j != i || !on(j) {
							return false, nil
						}
						return r.Undo(ctx, n, late)
					})
				}
				bg := context.WithoutCancel(ctx)
				Retry(bg, g, tm.TTL, undo(bg, Every), undo)
			}
		}
	}
	replies := Vote(ctx, g, tm, r.Ask, ballot)
	if r.Voted != nil {
		r.Voted(replies)
	}
	v.out = r.Tally(replies)
	wins := func(i int) bool { return v.out.Wins(replies[i]) }
	if r.valid(ctx, start, replies, v.out, wins) {
		if until, ok := tm.ValidUntil(start); ok {
			v.kept = r.Keep(ctx, v.out, replies, wins, until)
			return Played[T]{Won: true, Kept: v.kept, Replies: replies, Unsure: slices.ContainsFunc(replies, StillOut[T])}
		}
	}
	// The error is the round's, before the undo: an undo that waits out
	// ctx for a stalled node does not make a refusal ctx's doing.
	err := NotWon(ctx, g, replies)
	// Undo wherever the attempt may have landed; a node still out is
	// undone when it answers (above). A refusal wrote nothing.
	undo := func(ctx context.Context, on func(int) bool) []Reply[bool] {
		return Detached(ctx, g, tm, func(ctx context.Context, i int, n *Node) (bool, error) {
			if !on(i) || StillOut(replies[i]) || !r.MayHold(replies[i]) || neverSent(replies[i].Err) {
				return false, nil
			}
			return r.Undo(ctx, n, replies[i])
		})
	}
	undone := undo(ctx, Every)
	// An undo that failed may not have landed: it is asked again, in the
	// background (Retry), or what the attempt took there would stay until
	// its TTL. A waiter gives its token up after such an undo (Unsure), so
	// the second one takes back only what this attempt took.
	Retry(ctx, g, tm.TTL, undone, undo)
	p := Played[T]{Hint: v.out.Hint, Err: err, Replies: replies, Unsure: slices.ContainsFunc(replies, StillOut[T]) ||
		slices.ContainsFunc(undone, func(u Reply[bool]) bool { return u.Err != nil })}
	if g.Closed() { // closed while the round was out: its errors are Close's doing
		p.Err = ErrClosed
	}
	if !errors.Is(p.Err, ErrNotAcquired) {
		p.Hint = 0
	}
	return p
}

// valid reports whether a majority won the round with validity left,
// once its fencing token is durable, and on the nodes' replicas.
func (r Round[T]) valid(ctx context.Context, start time.Time, replies []Reply[T], out Outcome[T], wins func(int) bool) bool {
	if Count(len(replies), wins) < r.Group.Quorum {
		return false
	}
	if _, ok := r.Timing.ValidUntil(start); !ok {
		return false
	}
	if r.Durable != nil && !r.Durable(ctx, replies, wins, out.Fence) {
		return false
	}
	// A grant that its node's replicas did not take is that node's
	// failure: it no longer wins, and is undone with the rest if the
	// round fails.
	for i, err := range NotOnReplicas(ctx, r.Group, r.Timing, r.Acked, wins) {
		if err != nil {
			replies[i].Err = err
		}
	}
	return Count(len(replies), wins) >= r.Group.Quorum
}

// Count is how many of the nodes 0..n-1 are in on.
func Count(n int, on func(int) bool) int {
	k := 0
	for i := range n {
		if on(i) {
			k++
		}
	}
	return k
}

// Every is every node.
func Every(int) bool { return true }

// StillOut reports a node that a vote did not wait for.
func StillOut[T any](r Reply[T]) bool { return errors.Is(r.Err, errNoAnswerYet) }
