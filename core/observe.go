package core

import (
	"context"
	"errors"
	"time"
)

// Observer hears what happens to a Client's leases, for metrics, traces or
// logs (the module github.com/redlockgo/redlock/otel implements it with
// OpenTelemetry). Its methods are called on the goroutine of the event
// (Lost on one of its own), concurrently, so they must be safe for
// concurrent use and return quickly; they must not call the Client.
type Observer interface {
	// Acquired follows every acquisition call that reached the servers:
	// a TryLock, Lock, RLock, TryAcquire, Acquire, won or not, and a
	// Downgrade.
	Acquired(AcquireEvent)
	// Released follows every Unlock of a lease that was not unlocked
	// before (a lost one's included, with ErrLost), and the write lease
	// that a Downgrade turned into a read lease.
	Released(ReleaseEvent)
	// Extended follows every Extend that reached the servers, the
	// watchdog's (WithAutoExtend) included.
	Extended(ExtendEvent)
	// Lost follows a lease's end by loss: its validity ran out, or an
	// extension, Err or Unlock found that a majority no longer holds it.
	// It is not called for a lease that ends after Close.
	Lost(LostEvent)
}

// Event is what every event tells.
type Event struct {
	Primitive string       // the primitive's type: "Mutex", "FairMutex", "RWMutex", "Semaphore", "MultiLock"
	Name      string       // its name; a MultiLock's names joined by commas
	Strategy  WaitStrategy // how its acquisitions wait
	Token     uint64       // the lease's fencing token; 0 when no lease was won
	Err       error        // nil on success, else what the call returned (Lost: why the lease ended)
}

// AcquireEvent is an acquisition's outcome.
type AcquireEvent struct {
	Event
	Context  context.Context // the call's, for a span's parent; it may have ended
	Waited   bool            // a waiting call (Lock, RLock, Acquire), not a Try
	Attempts int             // the Redlock rounds it played; 0 when a release's grant alone gave the lease
	Wait     time.Duration   // from the call to its return
}

// ReleaseEvent is an Unlock's outcome.
type ReleaseEvent struct {
	Event
	Held time.Duration // from the lease's start to its Unlock
}

// ExtendEvent is an Extend's outcome.
type ExtendEvent struct {
	Event
	TTL time.Duration // the TTL asked for
}

// LostEvent is a lease's loss.
type LostEvent struct {
	Event
	Held time.Duration // from the lease's start to the moment its loss was seen
}

// WithObserver has o hear the leases' events (see Observer). Given to New,
// it observes every primitive; given to a primitive, that one (nil: none).
// Without it, observing costs nothing but a nil check.
func WithObserver(o Observer) Option {
	return set(optObserver, func(opts *options) { opts.observer = o })
}

// acquiring is one acquisition call as its Observer sees it; nil, and
// free, without an Observer.
type acquiring struct {
	o        *options
	ctx      context.Context
	name     string
	began    time.Time
	attempts int
	waited   bool
}

// acquiring starts the observation of an acquisition of name.
func (o *options) acquiring(ctx context.Context, name string, waited bool) *acquiring {
	if o.observer == nil {
		return nil
	}
	return &acquiring{o: o, ctx: ctx, name: name, began: time.Now(), waited: waited}
}

// attempt counts one round.
func (a *acquiring) attempt() {
	if a != nil {
		a.attempts++
	}
}

// done reports the call's outcome and returns it.
func (a *acquiring) done(l *Lease, err error) (*Lease, error) {
	if a == nil {
		return l, err
	}
	a.o.observer.Acquired(AcquireEvent{Event: a.o.event(a.name, l.Token(), err),
		Context: a.ctx, Waited: a.waited, Attempts: a.attempts, Wait: time.Since(a.began)})
	return l, err
}

func (o *options) event(name string, token uint64, err error) Event {
	return Event{Primitive: o.what, Name: name, Strategy: o.wait, Token: token, Err: err}
}

// observedSince is a lease's Observer with the lease's start, which the
// lease keeps in its options: a field of its own would cost every lease
// the room, observed or not.
type observedSince struct {
	Observer
	start time.Time
}

// observeFromNow has the lease's Observer, if any, know that it starts now.
func (l *Lease) observeFromNow() {
	if o := l.opts.observer; o != nil {
		l.opts.observer = observedSince{o, time.Now()}
	}
}

// held is how long the observed lease has been held.
func (l *Lease) held() time.Duration {
	s, _ := l.opts.observer.(observedSince)
	return time.Since(s.start)
}

// reportRelease reports an Unlock of a lease that ended before with prior (nil
// while held): a loss it found, as reportEnd would have; other failures
// (ErrNotHeld aside) to the Client's log; the outcome to the Observer.
func (l *Lease) reportRelease(prior error, err *error) {
	switch {
	case prior == nil && errors.Is(*err, ErrLost):
		l.reportEnd(*err)
	case *err != nil && !errors.Is(*err, ErrNotHeld):
		l.c.opts.logger.Warn("redlock: release failed",
			"primitive", l.opts.what, "name", l.name, "error", *err)
	}
	if o := l.opts.observer; o != nil {
		o.Released(ReleaseEvent{Event: l.opts.event(l.name, l.fence, *err), Held: l.held()})
	}
}

// reportExtend reports an Extend's outcome to the Observer.
func (l *Lease) reportExtend(ttl time.Duration, err *error) {
	if o := l.opts.observer; o != nil {
		o.Extended(ExtendEvent{Event: l.opts.event(l.name, l.fence, *err), TTL: ttl})
	}
}

// reportEnd reports a lease's end by loss (err, not ErrNotHeld): to the
// Client's log, and in the background, as the lease's lock is held, to
// the Observer.
func (l *Lease) reportEnd(err error) {
	if err == ErrNotHeld {
		return
	}
	l.c.opts.logger.Warn("redlock: lease lost; stop using what it protects",
		"primitive", l.opts.what, "name", l.name, "token", l.fence, "error", err)
	if o := l.opts.observer; o != nil {
		ev := LostEvent{Event: l.opts.event(l.name, l.fence, err), Held: l.held()}
		l.c.q.InBackground(func() { o.Lost(ev) })
	}
}
