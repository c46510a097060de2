package line

import (
	"context"
	"slices"
	"time"
)

// keyWaiters are one key's local waiters, oldest first.
//
// A release wakes one of them, not all: the oldest, unless one of them
// still holds a wake-up it has not acted on (it will attempt after this
// release anyway, so the event is dropped). A woken waiter that loses the
// race waits again; one that leaves with a wake-up it did not use hands it
// on. So every release is followed by an attempt of one local waiter.
type keyWaiters struct {
	waiters []*notifyWatch
	ready   chan struct{} // closed once the key is subscribed
	leaving chan struct{} // set while the last waiter unsubscribes, closed after
	woken   bool          // the key's own channel is subscribed too (Options.Woken)
}

// wakeOne wakes the oldest waiter (not a holder's watch). It runs under
// Notifier.mu, as every send on a wake channel does, so the send cannot
// block.
func (kw *keyWaiters) wakeOne() {
	for _, w := range kw.waiters {
		if len(w.wake) > 0 {
			return
		}
	}
	for _, w := range kw.waiters {
		if w.heard == nil {
			w.wake <- struct{}{}
			return
		}
	}
}

// wakeAll wakes every waiter (not a holder's watch) that holds no
// wake-up yet. It runs under Notifier.mu.
func (kw *keyWaiters) wakeAll() {
	for _, w := range kw.waiters {
		if w.heard == nil && len(w.wake) == 0 {
			w.wake <- struct{}{}
		}
	}
}

// PassOn wakes one of key's remaining waiters (see waiter.PassOn).
func (n *Notifier) PassOn(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if kw := n.keys[key]; kw != nil {
		kw.wakeOne()
	}
}

// notifyWatch is one blocked acquisition under Notify. Its methods are
// called from the acquiring goroutine only; it costs no goroutine.
type notifyWatch struct {
	n    *Notifier
	kw   *keyWaiters // nil until the first wait joins
	key  string
	o    *Options
	ctx  context.Context // the acquisition's, to tell on stop that it was cut short
	wake chan struct{}   // a pending wake-up
	// woken is set when wait returned on a wake-up, until the next wait:
	// the attempt that was to use it may not have run.
	woken bool
	// heard, when set, makes it a holder's, which waits for nothing and
	// is told the events after which its key may be gone (see Hear).
	heard func(event string)
}

func (w *notifyWatch) wait(ctx context.Context, attempt int, holderTTL time.Duration) error {
	if w.kw == nil {
		return w.n.join(ctx, w) // see Notifier.watch
	}
	w.woken = false
	start := time.Now()
	b := w.o.Backoff
	t := time.NewTimer(safetyNet(w.o, attempt, holderTTL))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-w.n.g.Closing():
		return ErrClosed
	case <-t.C:
		return nil
	case <-w.wake:
		w.woken = true
	}
	// Not sooner than Poll would have retried. A waiter that keeps being
	// woken and losing (to other clients, or to the DEL by which its own
	// failed quorum attempt cleans up a partial grant) backs off instead
	// of spinning; one that waited long retries at once.
	return sleep(ctx, w.n.g.Closing(), b.Delay(attempt)-time.Since(start))
}

// safetyNet is how long a waiter that a release would tell waits before
// it retries anyway, in case the event was lost: the holder's key is gone
// by its TTL (holderTTL; < 0: unknown). Jitter keeps the waiters of many
// clients, which all saw the same TTL, from retrying in step.
func safetyNet(o *Options, attempt int, holderTTL time.Duration) time.Duration {
	b := o.Backoff
	retry := holderTTL + b.Delay(attempt)
	if holderTTL < 0 {
		retry = b.Cap
	}
	if o.MaxAttempts > 0 {
		// The caller bounded the attempts, expecting them spaced by the
		// backoff as under Poll, not by the holder's TTL; a release still
		// ends the wait early.
		retry = min(retry, b.Delay(attempt))
	}
	return retry
}

func (w *notifyWatch) stop() {
	n, kw := w.n, w.kw
	if kw == nil { // never joined, or stopped already
		return
	}
	w.kw = nil
	n.mu.Lock()
	kw.waiters = slices.DeleteFunc(kw.waiters, func(x *notifyWatch) bool { return x == w })
	if len(w.wake) > 0 || (w.woken && w.ctx.Err() != nil) {
		kw.wakeOne()
	}
	last := len(kw.waiters) == 0
	if last {
		kw.leaving = make(chan struct{})
	}
	n.mu.Unlock()
	if !last {
		return
	}
	n.unsubscribe(w.ctx, w.o, w.key)
	n.mu.Lock()
	delete(n.keys, w.key)
	close(kw.leaving)
	n.mu.Unlock()
}
