package quorum

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Reply is one node's answer in a fan-out.
type Reply[T any] struct {
	V   T
	Err error
}

// Fanout runs op on every node at once, each request bounded by the node
// timeout, and returns the replies in node order. An attempt thus costs the
// slowest node's round trip, not the sum of all. Once Close began it sends
// nothing: every reply is ErrClosed.
func Fanout[T any](ctx context.Context, g *Group, tm Timing, op func(ctx context.Context, i int, n *Node) (T, error)) []Reply[T] {
	return Vote(ctx, g, tm, op, Ballot[T]{})
}

// straggleFor is the least a decided vote waits for the nodes still out.
const straggleFor = time.Millisecond

// errNoAnswerYet stands for the reply of a node that a vote did not wait
// for: its request is still in flight, and may land or not.
var errNoAnswerYet = errors.New("no answer yet: a majority answered first")

// Ballot says how vote reads a round and how long it waits for the nodes
// still out once the round is decided.
type Ballot[T any] struct {
	// Yes tells whether a node's answer counts toward the outcome; nil
	// waits for every node (Fanout), or, Patient, counts every answer.
	Yes func(T) bool
	// SplitFails marks an acquisition attempt: a majority that answered at
	// all decides it, and split between yes and no it fails (it is undone
	// and tried again) once the nodes still out had a tenth of the node
	// timeout to break the tie, rather than wait for a stalled node.
	SplitFails bool
	// Agree, when not nil, groups the yes answers: only those that agree
	// on a value (a Semaphore's slots) count together toward a majority.
	Agree func(T) int64
	// Patient makes a round wait for every node until Until closes (for
	// good when it is nil); once it closed and a majority answered, decided
	// or not, the others get as long as that majority took to answer (at
	// least straggleFor). A release waits so, for
	// its caller's context: after it, every node that answers has released,
	// and a context that ended bounds it even when the answers split.
	Patient bool
	Until   <-chan struct{}
	// ServeUntil, when not zero, has a Cluster node that answers it cannot
	// serve the call yet (driver.IsTransient: a slot migrating, a
	// failover) asked again until then, until Close, or once until closed
	// until the node timeout, each try within the node timeout: a
	// release, worth retrying while its hold lasts. Otherwise, and on
	// independent masters, the retries end with the node timeout.
	ServeUntil time.Time
	// Late, when not nil, gets the reply of each node still out when Vote
	// returned, in the background.
	Late func(i int, r Reply[T])
}

// Vote is Fanout for a round whose outcome a majority decides: once a
// majority answered yes, or so many answered no (without an error) that a
// majority cannot, it waits for the others only as long again as that took
// (at least straggleFor; see Ballot for the other rules), so that a
// healthy round still hears every node. The replies of those still out
// are then errNoAnswerYet; their requests finish in the background (Close
// waits for them). A stalled node (paused, or behind a partition that
// drops packets) then costs a round about one round trip, where waiting
// would cost every round the node timeout.
func Vote[T any](ctx context.Context, g *Group, tm Timing, op func(ctx context.Context, i int, n *Node) (T, error), b Ballot[T]) []Reply[T] {
	out := make([]Reply[T], len(g.Nodes))
	g.sending.RLock()
	if g.closed.Load() {
		g.sending.RUnlock()
		for i := range out {
			out[i].Err = ErrClosed
		}
		return out
	}
	if len(g.Nodes) == 1 {
		out[0] = askNode(ctx, g, tm, op, b.ServeUntil, b.Until, 0)
		g.sending.RUnlock()
		return out
	}
	type answer struct {
		i int
		r Reply[T]
	}
	answers := make(chan answer, len(g.Nodes))
	serve, closes := b.ServeUntil, b.Until // not b, which then stays on the stack
	for i := range g.Nodes {
		go func() { answers <- answer{i, askNode(ctx, g, tm, op, serve, closes, i)} }()
	}
	answered := make([]bool, len(g.Nodes))
	ayes, noes := map[int64]int{}, 0 // yes answers by what they agree on
	start := time.Now()
	var (
		decided  bool
		straggle <-chan time.Time // runs once decided
		until    <-chan struct{}  // b.Until once a majority answered, if patient
		majority time.Duration    // how long it took a majority to answer, if patient
	)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	wait := func(d time.Duration) { // once: a vote is decided once
		timer = time.NewTimer(d)
		straggle = timer.C
	}
	// stop gives up on the nodes still out, which finish in the background.
	stop := func(left int) []Reply[T] {
		for i := range out {
			if !answered[i] {
				out[i].Err = errNoAnswerYet
			}
		}
		// Added under the read lock, before Close can wait: Close waits
		// for the stragglers through background, so late may wait for its
		// caller's next round without holding up Close's barrier, which
		// would hold that round up.
		g.background.Add(1)
		g.sending.RUnlock()
		late := b.Late
		go func() {
			defer g.background.Done()
			for range left {
				if a := <-answers; late != nil {
					late(a.i, a.r)
				}
			}
		}()
		return out
	}
	for left := len(g.Nodes); left > 0; left-- {
		var a answer
		select {
		case a = <-answers:
		case <-straggle:
			return stop(left)
		case <-until: // patient, and a majority answered
			wait(max(straggleFor, majority))
			until = nil
			left++ // no answer taken
			continue
		}
		out[a.i], answered[a.i] = a.r, true
		if b.Yes == nil && !b.Patient {
			continue
		}
		switch {
		case a.r.Err != nil: // decides nothing: the error to report needs the others
		case b.Yes == nil || b.Yes(a.r.V):
			var group int64
			if b.Agree != nil {
				group = b.Agree(a.r.V)
			}
			ayes[group]++
		default:
			noes++
		}
		most, yes := 0, 0
		for _, n := range ayes {
			most, yes = max(most, n), yes+n
		}
		switch {
		case decided:
		case b.Patient && yes+noes >= g.Quorum:
			decided, until, majority = true, b.Until, time.Since(start)
		case b.Patient:
		case most >= g.Quorum || noes > len(g.Nodes)-g.Quorum:
			decided = true
			wait(max(straggleFor, time.Since(start)))
		case b.SplitFails && yes+noes >= g.Quorum:
			// Split: the nodes still out may still break the tie, and
			// get a tenth of the node timeout for it, not all of it.
			decided = true
			wait(max(straggleFor, time.Since(start), tm.NodeTimeout/10))
		}
	}
	g.sending.RUnlock()
	return out
}

// askNode is node i's reply to op within the node timeout, asked again
// while it cannot serve op yet (see RetryTransient and Ballot.ServeUntil).
func askNode[T any](ctx context.Context, g *Group, tm Timing, op func(ctx context.Context, i int, n *Node) (T, error), serve time.Time, until <-chan struct{}, i int) Reply[T] {
	n, try := g.Nodes[i], tm.NodeTimeout
	first := time.Now().Add(try)
	if !n.Cluster {
		serve = time.Time{} // an independent master that refuses is not changing
	}
	nctx, cancel := ctx, context.CancelFunc(noCancel)
	if d, ok := ctx.Deadline(); !ok || d.After(first) || serve.After(first) {
		// A caller's deadline within the node timeout bounds the call
		// already, without a context of its own.
		nctx, cancel = context.WithDeadline(ctx, later(serve, first))
	}
	defer cancel()
	try1 := func(ctx context.Context) (T, error) { return op(ctx, i, n) }
	if serve.After(first) {
		// Past the node timeout, the retries end with Close, or once
		// the caller gave up (until); each try has a node timeout of its
		// own. Otherwise nctx's deadline is every try's.
		go func() {
			select {
			case <-g.closing:
			case <-until:
				t := time.NewTimer(time.Until(first))
				defer t.Stop()
				select {
				case <-t.C:
				case <-nctx.Done():
				}
			case <-nctx.Done():
			}
			cancel()
		}()
		try1 = func(ctx context.Context) (T, error) {
			ctx, cancel := context.WithTimeout(ctx, try)
			defer cancel()
			return op(ctx, i, n)
		}
	}
	r := RetryTransient(nctx, n, try1)
	n.heard(r.Err)
	return r
}

// RetryTransient runs op on n until it returns something else than an
// error that says the server did not run it (n.unserved: as while a
// Cluster slot migrates or a master fails over), or ctx ends, waiting a
// little longer each time. A call cut short by ctx after such an error
// says both (errWasChanging). op must be one server call, or calls that
// may run again (see multiHold).
func RetryTransient[T any](ctx context.Context, n *Node, op func(context.Context) (T, error)) Reply[T] {
	var last error // the last transient reply
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		v, err := op(ctx)
		if !n.unserved(err) {
			if err != nil && last != nil && ctx.Err() != nil {
				err = fmt.Errorf("%w (%w: %v)", err, errWasChanging, last)
			}
			return Reply[T]{v, err}
		}
		last = err
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return Reply[T]{v, err}
		case <-t.C:
		}
	}
}

func noCancel() {}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// errWasChanging marks the error of a call whose node had answered that
// it could not serve it yet (driver.IsTransient) before the call failed
// otherwise, as when its node timeout ended during a retry.
var errWasChanging = errors.New("the node answered before that it cannot serve this yet")

// Detached runs op on every node, for what must be done even when ctx
// was cancelled (an undo, a waiter leaving the line): detached from ctx,
// it waits for every node, each up to the node timeout, but once ctx
// ended and a majority answered it waits for no stalled node (see
// Ballot.Patient); the replies of those are errNoAnswerYet.
func Detached[T any](ctx context.Context, g *Group, tm Timing, op func(ctx context.Context, i int, n *Node) (T, error)) []Reply[T] {
	return DetachedUntil(ctx, g, tm, time.Time{}, op)
}

// DetachedUntil is Detached, where a node that cannot serve the call yet
// is asked again until serveUntil (see Ballot).
func DetachedUntil[T any](ctx context.Context, g *Group, tm Timing, serveUntil time.Time, op func(ctx context.Context, i int, n *Node) (T, error)) []Reply[T] {
	return Vote(detach(ctx), g, tm, op, Ballot[T]{Patient: true, Until: ctx.Done(), ServeUntil: serveUntil})
}

// detach is ctx without its cancellation and deadline: ctx itself when it
// has neither, for which context.WithoutCancel would allocate a copy.
func detach(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); !ok && ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}
