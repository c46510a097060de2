package quorum

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// NotWon is the error of an acquisition attempt that did not win:
// ErrNoQuorum when too few nodes answered (ErrServerError when enough
// answered, some with an error reply), ctx's error when ctx ended
// during the attempt (a grant may have been lost to it, for example while
// the fencing token was made durable), and ErrNotAcquired otherwise.
func NotWon[T any](ctx context.Context, g *Group, replies []Reply[T]) error {
	if err := NoQuorum(ctx, g, replies); err != nil {
		return err
	}
	if err := Ended(ctx); err != nil {
		return err
	}
	return ErrNotAcquired
}

// Ended returns ctx's error, also once its deadline has passed but its
// timer has not fired yet: a client that sets its socket deadline from ctx
// (go-redis with ContextTimeoutEnabled) fails with an I/O timeout a moment
// before ctx reports DeadlineExceeded.
func Ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// NodeErrors joins the nodes' errors, each naming its node.
func NodeErrors[T any](g *Group, replies []Reply[T]) error {
	var errs []error
	for i, r := range replies {
		if r.Err != nil {
			errs = append(errs, g.NodeError(i, r.Err))
		}
	}
	return errors.Join(errs...)
}

// NodeError is node i's error, naming the node.
func (g *Group) NodeError(i int, err error) error {
	return fmt.Errorf("node %d (%s): %w", i, g.Nodes[i].Driver.Name(), err)
}

// NoQuorum reports whether so many nodes failed that a majority is out of
// reach, joining their errors under a sentinel that says why: ErrNoQuorum
// when nodes did not answer, ErrUnavailable when those that cost the
// majority answered that they cannot serve the call yet (see
// Node.changing), ErrReplicasBehind when the replicas of those did not
// take a grant, and ErrServerError when enough answered but some with an
// error reply (a script refused, WRONGTYPE): the servers are up, and the
// message says what they answered. When the group closed or ctx ended,
// the nodes failed because of it: ErrClosed or ctx's error is returned
// instead, so that a caller can tell its own doing from unreachable nodes.
func NoQuorum[T any](ctx context.Context, g *Group, replies []Reply[T]) error {
	var errs []error
	refused, transient, behind := 0, 0, 0
	for i, r := range replies {
		if r.Err != nil {
			switch {
			case errors.Is(r.Err, ErrReplicasBehind):
				behind++
			case g.Nodes[i].changing(r.Err):
				transient++
			case g.Nodes[i].Driver.IsServerError(r.Err):
				refused++
			}
			errs = append(errs, g.NodeError(i, r.Err))
		}
	}
	if len(g.Nodes)-len(errs) >= g.Quorum {
		return nil
	}
	if g.closed.Load() {
		return ErrClosed
	}
	if err := Ended(ctx); err != nil {
		return err
	}
	answered := len(g.Nodes) - len(errs) + refused
	if answered >= g.Quorum {
		return errors.Join(append([]error{ErrServerError}, errs...)...)
	}
	head := ErrNoQuorum
	switch {
	case behind > 0 && answered+behind >= g.Quorum:
		head = ErrReplicasBehind
	case transient > 0 && answered+behind+transient >= g.Quorum:
		head = ErrUnavailable
	default:
		errs = append([]error{errUnreachable}, errs...)
	}
	return errors.Join(append([]error{head}, errs...)...)
}

// Unanswered is how many nodes gave no answer: a lost reply, a timeout,
// a broken connection. Their request may have run or not, unlike one
// that an error reply refused.
func Unanswered[T any](g *Group, replies []Reply[T]) int {
	n := 0
	for i, r := range replies {
		if r.Err != nil && !g.Nodes[i].Driver.IsServerError(r.Err) {
			n++
		}
	}
	return n
}

// Outage reports an error that says the servers could not serve a call
// (ErrNoQuorum, ErrUnavailable, ErrReplicasBehind): it may pass, and the
// waiting calls wait it out.
func Outage(err error) bool {
	// A round headed ErrServerError joins its nodes' errors too, and one
	// of them may be a node's ErrReplicasBehind: the heading decides.
	if errors.Is(err, ErrServerError) || errors.Is(err, ErrClosed) {
		return false
	}
	return errors.Is(err, ErrNoQuorum) || errors.Is(err, ErrUnavailable) || errors.Is(err, ErrReplicasBehind)
}

// Retryable reports whether a waiting call tries again after an attempt
// that failed with err: not acquired, or an outage.
func Retryable(err error) bool {
	return errors.Is(err, ErrNotAcquired) || Outage(err)
}

// WaitedOut is the error of a waiting call that ended with err, whose
// attempts last failed with cause (nil when the servers answered): when
// ctx ended during an outage, ctx's error joined with the outage, so that
// errors.Is finds both.
func WaitedOut(err, cause error) error {
	if cause == nil || Outage(err) || !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return errors.Join(err, cause)
}

// neverSent reports an error of a call that no server received: the
// driver could not connect. The drivers never send a call again on another
// connection, so a failed dial means the call was not sent, and there is
// nothing to undo (undoing it would only start background retries, one
// per attempt, for as long as the node is down).
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}
