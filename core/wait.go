package core

import (
	"context"
	"time"
)

// waiter is a Client's wait strategy.
type waiter interface {
	// watch starts watching key for one acquisition whose attempt was
	// refused at it. No release may be missed between a failed attempt and
	// the wait: a strategy that subscribes lazily (Notify, so that an
	// uncontended Lock costs one round trip) does so in the first wait and
	// returns at once, so that the next attempt follows the subscription.
	watch(ctx context.Context, o *options, key string) (watch, error)
	// passOn wakes one local waiter of key. A keyspace event wakes one
	// waiter per Client; a primitive whose acquisition found room for more
	// than its caller (an open latch) passes the wake-up on
	// after returning, so that each woken waiter wakes the next.
	passOn(key string)
	close() error
}

// watch is one blocked acquisition's view of its key.
type watch interface {
	// wait blocks until another attempt is worth making, or ctx ends.
	// attempt counts failed attempts from 0; holderTTL is the holder's
	// remaining time reported by the last attempt, negative when unknown.
	wait(ctx context.Context, attempt int, holderTTL time.Duration) error
	stop()
}

// queues returns the Client's notifier when o waits under Notify, where a
// Mutex's and a MultiLock's waiters queue (see line) and a FairMutex's,
// RWMutex's and Semaphore's tickets are told of releases.
func (c *Client) queues(o *options) (*notifier, bool) {
	n, ok := c.wait.(*notifier)
	return n, ok && o.wait == Notify
}

func newWaiter(c *Client) (waiter, error) {
	if c.opts.wait == Poll {
		return poller{c.closing}, nil
	}
	return newNotifier(c)
}

// poller is the Poll strategy: sleep with backoff and full jitter, until
// the Client closes.
type poller struct{ closing <-chan struct{} }

func (p poller) watch(_ context.Context, o *options, _ string) (watch, error) {
	return pollWatch{o.backoff, p.closing}, nil
}

func (poller) passOn(string) {}

func (poller) close() error { return nil }

type pollWatch struct {
	b       Backoff
	closing <-chan struct{}
}

func (p pollWatch) wait(ctx context.Context, attempt int, _ time.Duration) error {
	return sleep(ctx, p.closing, p.b.Delay(attempt))
}

func (pollWatch) stop() {}

// sleep waits d, or until ctx ends (returning its error) or the Client
// closes (ErrClosed).
func sleep(ctx context.Context, closing <-chan struct{}, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-closing:
		return ErrClosed
	case <-t.C:
		return nil
	}
}
