package core

import (
	"log/slog"
	"time"
)

// WaitStrategy is how a blocked acquisition learns that it may retry.
type WaitStrategy int

const (
	// Notify wakes waiters through Redis keyspace notifications when a key
	// they wait on is deleted or expires. It needs RESP3 connections and
	// permission to set notify-keyspace-events. It is the default.
	Notify WaitStrategy = iota
	// Poll retries with exponential backoff and full jitter. It works with
	// every driver and server and needs no CONFIG.
	Poll
)

func (s WaitStrategy) String() string {
	if s == Poll {
		return "Poll"
	}
	return "Notify"
}

// Option configures a Client (passed to New, it sets the default for every
// primitive) or one primitive (passed to Client.Mutex, it overrides).
type Option func(*options)

type options struct {
	ttl          time.Duration
	owner        string
	autoExtend   bool
	fencing      bool
	maxAttempts  int
	wait         WaitStrategy
	backoff      Backoff
	driftFactor  float64
	nodeTimeout  time.Duration
	keyPrefix    string
	logger       *slog.Logger
	notifyConfig bool
	latchExpiry  time.Duration
}

func defaultOptions() options {
	return options{
		ttl:          10 * time.Second,
		fencing:      true,
		wait:         Notify,
		backoff:      Backoff{Base: 2 * time.Millisecond, Cap: 250 * time.Millisecond, Multiplier: 2},
		driftFactor:  0.01,
		keyPrefix:    "redlock:",
		logger:       slog.New(slog.DiscardHandler),
		notifyConfig: true,
		latchExpiry:  24 * time.Hour,
	}
}

// WithTTL sets how long a lease lives without extension (default 10s).
func WithTTL(ttl time.Duration) Option { return func(o *options) { o.ttl = ttl } }

// WithOwner makes acquisitions reentrant for owner: a second acquisition by
// the same owner succeeds and counts, and the lock is free again when every
// one of its leases was unlocked.
func WithOwner(owner string) Option { return func(o *options) { o.owner = owner } }

// WithAutoExtend keeps every lease extended while it is held: by its TTL
// whenever less than two thirds of the TTL is left, so every third of the
// TTL, and later after an Extend by hand for longer. See Lease.Done for
// what happens when that fails.
func WithAutoExtend() Option { return func(o *options) { o.autoExtend = true } }

// WithFencing(false) skips, in quorum mode, the extra round trip that makes
// a fencing token durable on a majority before Lock returns. Without it,
// Token is still unique but no longer guaranteed to increase across
// holders. It is on by default; a single node never needs the extra trip.
func WithFencing(on bool) Option { return func(o *options) { o.fencing = on } }

// WithMaxAttempts bounds Lock to n attempts, after which it returns
// ErrNotAcquired. By default Lock waits until its context ends.
func WithMaxAttempts(n int) Option { return func(o *options) { o.maxAttempts = n } }

// WithWaitStrategy chooses how blocked acquisitions wait (default Notify).
func WithWaitStrategy(s WaitStrategy) Option { return func(o *options) { o.wait = s } }

// WithBackoff sets the retry backoff between attempts: full jitter over
// min(cap, base × multiplier^attempt).
func WithBackoff(b Backoff) Option { return func(o *options) { o.backoff = b } }

// WithDriftFactor sets the clock drift allowance as a fraction of the TTL
// (default 0.01); validity is TTL − elapsed − (TTL × factor + 2ms).
func WithDriftFactor(f float64) Option { return func(o *options) { o.driftFactor = f } }

// WithNodeTimeout bounds each request to one node (default: a tenth of the
// TTL, at most 500ms), so that one slow node cannot eat the validity window.
func WithNodeTimeout(d time.Duration) Option { return func(o *options) { o.nodeTimeout = d } }

// WithKeyPrefix sets the prefix of every key (default "redlock:").
func WithKeyPrefix(p string) Option { return func(o *options) { o.keyPrefix = p } }

// WithLogger sets where the client logs; capability detection logs at debug.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// WithNotifyConfig(false) stops New from setting notify-keyspace-events
// itself, for servers configured by hand.
func WithNotifyConfig(on bool) Option { return func(o *options) { o.notifyConfig = on } }

// WithLatchExpiry sets how long a latch lives after TrySetCount (default
// 24h), so that a latch nobody counts down to zero does not stay forever;
// on expiry its waiters return as if it had opened.
func WithLatchExpiry(d time.Duration) Option { return func(o *options) { o.latchExpiry = d } }

// driftAllowance is the part of ttl kept back for clock drift.
func (o *options) driftAllowance(ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*o.driftFactor) + 2*time.Millisecond
}

// validUntil returns the end of the validity window of a grant of ttl
// requested at start (taken before the first send): start + ttl − drift.
// The time the request took is inside the window, not subtracted again.
// ok is false once the window has closed.
func (o *options) validUntil(start time.Time, ttl time.Duration) (until time.Time, ok bool) {
	until = start.Add(ttl - o.driftAllowance(ttl))
	return until, time.Until(until) > 0
}

// reserve is how long a release keeps the lock for an owner's waiter it
// woke (WithOwner; other waiters are granted the lock outright), so that
// no one barges in before the waiter's attempt arrives; a woken waiter
// that died holds the lock up no longer than this.
func (o *options) reserve() time.Duration {
	return min(o.ttl/2, 200*time.Millisecond)
}

func (o *options) perNodeTimeout() time.Duration {
	if o.nodeTimeout > 0 {
		return o.nodeTimeout
	}
	return min(o.ttl/10, 500*time.Millisecond)
}

// validate reports bad primitive options before anything is written.
func (o *options) validate(name string) error {
	switch {
	case name == "":
		return invalid("the name is empty; give every lock a name")
	case o.ttl <= 0:
		return invalid("TTL %v is not positive", o.ttl)
	case o.ttl%time.Millisecond != 0:
		return invalid("TTL %v is not a whole number of milliseconds", o.ttl)
	case o.driftFactor < 0 || o.driftFactor >= 1:
		return invalid("drift factor %v is outside [0, 1)", o.driftFactor)
	case o.ttl <= o.driftAllowance(o.ttl):
		return invalid("TTL %v is not above the drift allowance %v; use a longer TTL", o.ttl, o.driftAllowance(o.ttl))
	case o.maxAttempts < 0:
		return invalid("max attempts %d is negative", o.maxAttempts)
	}
	return o.backoff.validate()
}
