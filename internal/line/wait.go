// Package line is waiting, shared by every primitive that blocks: the two
// wait strategies (Poll, a backoff with full jitter; Notify, a Notifier),
// and under Notify a waiter's place in a line kept in Redis: its tickets,
// the grants and wake-ups that releases send it by message, each checked
// by its MAC, the subscriptions (classic and sharded) that bring them, the
// keyspace events that wake the waiters of a key, the notification config,
// and the safety nets that retry when a message is lost. It knows nothing
// of any primitive's keys beyond a ticket's, and asks the nodes through
// package quorum.
package line

import (
	"context"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"
)

// Waiter is a Client's wait strategy.
type Waiter interface {
	// watch starts watching key for one acquisition whose attempt was
	// refused at it. No release may be missed between a failed attempt and
	// the wait: a strategy that subscribes lazily (Notify, so that an
	// uncontended Lock costs one round trip) does so in the first wait and
	// returns at once, so that the next attempt follows the subscription.
	watch(ctx context.Context, o *Options, key string) (watch, error)
	// PassOn wakes one local waiter of key. A keyspace event wakes one
	// waiter per Client; a primitive whose acquisition found room for more
	// than its caller (an open latch) passes the wake-up on
	// after returning, so that each woken waiter wakes the next.
	PassOn(key string)
	Close() error
}

// watch is one blocked acquisition's view of its key.
type watch interface {
	// wait blocks until another attempt is worth making, or ctx ends.
	// attempt counts failed attempts from 0; holderTTL is the holder's
	// remaining time reported by the last attempt, negative when unknown.
	wait(ctx context.Context, attempt int, holderTTL time.Duration) error
	stop()
}

// Options are how one primitive's calls wait.
type Options struct {
	Backoff     Backoff
	MaxAttempts int    // 0: until ctx ends
	Prefix      string // the keys' prefix, under which the Client's channel tells its tickets
	Poll        bool   // the primitive waits by Poll, though the Client notifies
	Fencing     bool   // a lease from grants needs one fencing token on a quorum
	// Woken: the library's write that frees the watched key for its
	// waiters also tells them on the channel named as the key
	// (lib/wake.lua), which they subscribe with its keyspace channel.
	Woken       bool
	NodeTimeout time.Duration
}

// Backoff is exponential backoff with full jitter (see quorum.Jitter).
type Backoff struct {
	Base, Cap  time.Duration
	Multiplier float64
}

// Delay is the random sleep before retry n.
func (b Backoff) Delay(n int) time.Duration { return quorum.Jitter(b.Base, b.Cap, b.Multiplier, n) }

// Sleep sleeps Delay(n), or until ctx ends (returning its error) or
// closing is closed (ErrClosed).
func (b Backoff) Sleep(ctx context.Context, closing <-chan struct{}, n int) error {
	return sleep(ctx, closing, b.Delay(n))
}

// Poller is the Poll strategy: sleep with backoff and full jitter, until
// the Client closes.
type Poller struct{ closing <-chan struct{} }

func (p Poller) watch(_ context.Context, o *Options, _ string) (watch, error) {
	return pollWatch{o.Backoff, p.closing}, nil
}

func (Poller) PassOn(string) {}

func (Poller) Close() error { return nil }

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

// Acquire is the wait loop every blocking primitive shares, but the queued
// waiters of Notify (see Line): attempt, and until done watch the key the
// attempt was refused at and wait, at most until the holder's TTL ends. A
// watch subscribes on its first wait and has the caller attempt again at
// once (see Waiter), so no release between an attempt and a wait is
// missed. One watch at a time: a watch left on a key no longer waited for
// (a MultiLock's attempt may stop at another name each time) would absorb
// that key's wake-ups. An outage (quorum.Outage) is waited out as a
// refusal is, after the backoff.
func Acquire[L any](ctx context.Context, strategy Waiter, o Options, attempt func(context.Context) (l L, key string, holderTTL time.Duration, err error)) (L, error) {
	var (
		zero     L
		w        watch
		watching string
		outage   error // the last attempt's, while the servers fail
	)
	defer func() {
		if w != nil {
			w.stop()
		}
	}()
	for n := 0; ; n++ {
		l, key, holderTTL, err := attempt(ctx)
		if !quorum.Retryable(err) {
			return l, quorum.WaitedOut(err, outage)
		}
		outage = lastOutage(outage, err)
		if o.MaxAttempts > 0 && n+1 >= o.MaxAttempts {
			return zero, err
		}
		if w == nil || key != watching {
			if w != nil {
				w.stop()
			}
			wo := o // the watch keeps it: only a refused attempt pays for the copy
			if w, err = strategy.watch(ctx, &wo, key); err != nil {
				w = nil
				return zero, quorum.WaitedOut(err, outage)
			}
			watching = key
		}
		if err := w.wait(ctx, n, holderTTL); err != nil {
			return zero, quorum.WaitedOut(err, outage)
		}
	}
}

// lastOutage is the outage a waiter reports if its ctx ends now, after an
// attempt that failed with err: err's, or none once a majority answered.
func lastOutage(outage, err error) error {
	switch {
	case quorum.Outage(err):
		return err
	case errors.Is(err, quorum.ErrNotAcquired):
		return nil
	}
	return outage
}
