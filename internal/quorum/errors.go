package quorum

import (
	"context"
	"errors"
	"fmt"
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
// reach, joining their errors under ErrNoQuorum when too few nodes
// answered at all, and under ErrServerError when enough answered but some
// with an error reply (a script refused, WRONGTYPE): the servers are up,
// and the message says what they answered. When the group closed or ctx
// ended, the nodes failed because of it: ErrClosed or ctx's error is
// returned instead, so that a caller can tell its own doing from
// unreachable nodes.
func NoQuorum[T any](ctx context.Context, g *Group, replies []Reply[T]) error {
	var errs []error
	refused, transient := 0, 0
	for i, r := range replies {
		if r.Err != nil {
			switch {
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
	if len(g.Nodes)-len(errs)+refused >= g.Quorum {
		return errors.Join(append([]error{ErrServerError}, errs...)...)
	}
	hint := errUnreachable
	if transient > 0 && len(g.Nodes)-len(errs)+refused+transient >= g.Quorum {
		hint = errChanging
	}
	return errors.Join(append([]error{ErrNoQuorum, hint}, errs...)...)
}

// Retryable reports whether a waiting call tries again after an attempt
// that failed with err: not acquired, or not served yet (errChanging).
func Retryable(err error) bool {
	return errors.Is(err, ErrNotAcquired) || errors.Is(err, errChanging)
}
