package core

import (
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"
)

// WaitStrategy is how a blocked acquisition learns that it may retry.
type WaitStrategy int

const (
	// Notify hands a released lock to the next waiter in line by a
	// message, and wakes waiters through Redis keyspace notifications when
	// a key they wait on is deleted or expires without the library (a
	// holder that died). It needs RESP3 connections; where the server
	// refuses to publish keyspace events (see WithNotifyConfig) it works
	// without them: the library's own releases and count-downs still wake
	// by message, and only those cases wait for the waiters' own retry.
	// It is the default.
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
// primitive) or one primitive (passed to Client.Mutex, it overrides). A
// value that cannot work (a NaN, a duration that is not positive, a node
// timeout not below the TTL, ...) is ErrInvalid at the call that receives
// it: New, or the primitive's methods. So is an option given to a
// primitive it does not apply to (WithOwner to a Latch, WithLatchExpiry to
// a Mutex, WithLogger to any primitive, ...); given to New, such an option
// is a default and applies only where it can.
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
	idle         time.Duration
	replicaAcks  int // -1: by the replicas (see WithReplicaAcks)
	observer     Observer
	metadata     string // see WithMetadata

	given optionSet // the options given to the primitive itself (see applies)
	what  string    // the primitive's type, "" for New's defaults
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
		idle:         10 * time.Minute,
		replicaAcks:  -1,
	}
}

// set is an option that records it was given, for applies.
func set(which optionSet, f func(*options)) Option {
	return func(o *options) {
		f(o)
		o.given |= which
	}
}

// WithTTL sets how long a lease lives without extension (default 10s): a
// positive whole number of milliseconds above the drift allowance.
func WithTTL(ttl time.Duration) Option { return set(optTTL, func(o *options) { o.ttl = ttl }) }

// WithOwner makes acquisitions reentrant for owner: a second acquisition by
// the same owner succeeds, and the lock is free again when every one of its
// leases was unlocked or expired. Each lease holds the lock by a token of
// its own, so that releasing, extending or undoing one (late, or twice)
// never touches another; their TTLs may differ, and the lock's key lives
// as long as the longest (an extension never shortens it). It applies to
// Mutex, MultiLock, FairMutex (whose owner, holding the lock, takes it
// again without waiting in line) and RWMutex (its write lock; its owner's
// read leases, while it writes, are granted at once); WithOwner("")
// clears a Client default, on any primitive.
func WithOwner(owner string) Option {
	if owner == "" {
		return func(o *options) { o.owner = "" }
	}
	return set(optOwner, func(o *options) { o.owner = owner })
}

// WithIdleExpiry sets how long what a name keeps between its uses lasts
// after its last use (default 10 minutes): its fencing counter, which every
// acquisition and hand-off renews, and a Semaphore's number of permits
// stored by SetPermits (or TrySetPermits, AddPermits), which every
// acquisition renews, and the mark each AddPermits or TrySetPermits call
// leaves where it wrote, which nothing renews. A name no one holds, waits
// for or uses for longer leaves nothing on the servers. A counter that
// expired starts again from the server's clock (see the package
// documentation), so tokens still increase as long as no server's clock
// steps back, or runs behind another's, by as much as d.
func WithIdleExpiry(d time.Duration) Option {
	return set(optIdleExpiry, func(o *options) { o.idle = d })
}

// WithAutoExtend keeps every lease extended while it is held: by its TTL
// whenever less than two thirds of the TTL is left, so every third of the
// TTL, and later after an Extend by hand for longer. See Lease.Done for
// what happens when that fails.
func WithAutoExtend() Option { return set(optAutoExtend, func(o *options) { o.autoExtend = true }) }

// WithFencing(false) skips, in quorum mode, the extra round trip that makes
// a fencing token durable on a majority before Lock returns. Without it,
// Token is still unique but no longer guaranteed to increase across
// holders. It is on by default; a single node never needs the extra trip.
func WithFencing(on bool) Option { return set(optFencing, func(o *options) { o.fencing = on }) }

// WithMaxAttempts bounds Lock to n attempts, after which it returns
// ErrNotAcquired; n is not negative. By default (0) Lock waits until its
// context ends. It does not apply to a Latch, whose Wait ends only when
// the latch opens or its context ends.
func WithMaxAttempts(n int) Option {
	return set(optMaxAttempts, func(o *options) { o.maxAttempts = n })
}

// WithWaitStrategy chooses how blocked acquisitions wait (default Notify).
// A primitive of a Client that waits by Poll cannot wait by Notify.
func WithWaitStrategy(s WaitStrategy) Option { return set(optWait, func(o *options) { o.wait = s }) }

// WithBackoff sets the retry backoff between attempts: full jitter over
// min(cap, base × multiplier^attempt). See Backoff for its bounds.
func WithBackoff(b Backoff) Option { return set(optBackoff, func(o *options) { o.backoff = b }) }

// WithDriftFactor sets the clock drift allowance as a fraction of the TTL,
// in [0, 1) (default 0.01); validity is TTL − elapsed − (TTL × factor + 2ms).
func WithDriftFactor(f float64) Option {
	return set(optDriftFactor, func(o *options) { o.driftFactor = f })
}

// WithNodeTimeout bounds each request to one node, so that one slow node
// cannot eat the validity window; it must be at least a millisecond and
// below the TTL.
// By default it is a tenth of the TTL, at least 50ms (what a loopback
// round trip on a loaded machine clears) and at most 500ms, and never more
// than half the validity the TTL leaves after the drift allowance: 48ms
// for a 100ms TTL, 23ms for a 50ms one.
func WithNodeTimeout(d time.Duration) Option {
	return set(optNodeTimeout, func(o *options) { o.nodeTimeout = d })
}

// WithKeyPrefix sets the prefix of every key (default "redlock:"). A
// primitive's keys are the prefix, its name in braces (their Redis Cluster
// hash tag, which keeps them in one slot), and a suffix; so a prefix must
// hold no '{' or '}', and a name no '}' (see Client).
func WithKeyPrefix(p string) Option { return set(optKeyPrefix, func(o *options) { o.keyPrefix = p }) }

// WithLogger sets where the Client logs, for its whole life: capability
// detection at debug; at warn what needs an operator (a lost lease, a
// release that failed other than with ErrNotHeld, a server that refused
// CONFIG or may evict the keys). Nothing is logged at info, nor on the
// path of a call that succeeds. It applies to New only.
func WithLogger(l *slog.Logger) Option { return set(optLogger, func(o *options) { o.logger = l }) }

// WithNotifyConfig(false) stops the Client from setting
// notify-keyspace-events itself (at its first wait on a node, or in Ping),
// for servers configured by hand. Where a server refuses CONFIG (most
// managed services), the Client logs it once at warn level, with the
// command to run by hand, and Notify works without the events: every
// wake the library causes is a message; only a key that vanishes without
// the library (a holder that died, a DEL by hand) is noticed at the
// waiters' own retry, and a lease's Done closes at its next extension
// or its end rather than at once. It applies to New only.
func WithNotifyConfig(on bool) Option {
	return set(optNotifyConfig, func(o *options) { o.notifyConfig = on })
}

// WithLatchExpiry sets how long a latch lives after TrySetCount (default
// 24h), so that a latch nobody counts down to zero does not stay forever;
// on expiry its waiters return as if it had opened. It is a positive whole
// number of milliseconds, and applies to Latch only.
func WithLatchExpiry(d time.Duration) Option {
	return set(optLatchExpiry, func(o *options) { o.latchExpiry = d })
}

// WithReplicaAcks sets how many replicas of a master must have taken a
// grant before it counts: the lock key and the fencing counter of an
// acquisition, a hand-off, an extension. A failover promotes a replica;
// without it, a write the replica missed is lost, and the lock, with the
// same fencing token, could go to a second holder while the first still
// holds it. The write is made to wait (WAIT) within the node timeout; a
// node whose replicas fell short counts as failed, so a lease needs
// validity left once its grants are on the replicas.
//
// By default a grant waits for one replica of the master that took it,
// when that master has one. On a Redis Cluster the replicas are counted
// from the cluster's configuration (CLUSTER NODES), each master's for the
// slots it serves, failed and disconnected replicas included: the cluster
// may still promote one. So while a master's replicas are all down,
// flagged failed or cut off, grants on it fail with ErrReplicasBehind
// rather than count unacknowledged; a replica removed from the
// configuration (CLUSTER FORGET) no longer counts. On one server, found
// through Sentinel or not, the server shows only the replicas connected
// to it (INFO replication): a node waits for one when one is connected,
// or was at a count since the server became master. That default, rather
// than a number to configure, keeps a server without replicas working as
// is; what it misses is a replica already disconnected at the Client's
// first count, which Sentinel still promotes if its link has been down
// for less than ten times down-after-milliseconds (plus the master's
// downtime): with Sentinel, WithReplicaAcks(1) waits for one always (and
// every grant fails while none is connected). Replicas are counted at the
// first grant, then every second, and after replicas fell short; a node
// whose server refuses to tell (INFO, CLUSTER NODES: logged), or whose
// driver cannot wait (driver.Replicated), waits for none.
// WithReplicaAcks(0) turns the wait off, and a failover may then lose a
// grant; n > 1 waits for n replicas of every master, and then the loss of
// a replica stops every grant. It applies to New only.
//
// WAIT is not consensus: a failover may still promote a replica that did
// not take the write (one that was cut off while another acknowledged,
// or a manual failover that forces it). SAFETY.md lists when.
func WithReplicaAcks(n int) Option {
	return set(optReplicaAcks, func(o *options) { o.replicaAcks = n })
}

// timing is what bounds o's calls in time.
func (o *options) timing() quorum.Timing {
	return quorum.Timing{TTL: o.ttl, NodeTimeout: o.perNodeTimeout(), DriftFactor: o.driftFactor}
}

// waiting is how o's calls wait.
func (o *options) waiting() line.Options {
	return line.Options{Backoff: line.Backoff(o.backoff), MaxAttempts: o.maxAttempts, Prefix: o.keyPrefix,
		Poll: o.wait == Poll, Fencing: o.fencing, NodeTimeout: o.perNodeTimeout()}
}

// driftAllowance is the part of the TTL kept back for clock drift.
func (o *options) driftAllowance() time.Duration {
	return quorum.Timing{TTL: o.ttl, DriftFactor: o.driftFactor}.Drift()
}

// reserve is how long a release keeps the lock for an owner's waiter it
// woke (WithOwner; other waiters are granted the lock outright), so that
// no one barges in before the waiter's attempt arrives; a woken waiter
// that died holds the lock up no longer than this.
func (o *options) reserve() time.Duration {
	return min(o.ttl/2, 200*time.Millisecond)
}

// perNodeTimeout bounds one request to one node: see WithNodeTimeout.
func (o *options) perNodeTimeout() time.Duration {
	if o.nodeTimeout > 0 {
		return o.nodeTimeout
	}
	d := min(max(o.ttl/10, 50*time.Millisecond), 500*time.Millisecond)
	return min(d, (o.ttl-o.driftAllowance())/2)
}

// Backoff is exponential backoff with full jitter: before retry n (from 0)
// a caller sleeps a uniformly random time in [0, min(Cap, Base×Multiplier^n)),
// so that competing clients spread out instead of retrying in step.
// WithBackoff and New take one with 0 < Base <= Cap <= a year and a finite
// Multiplier >= 1, and report any other with ErrInvalid.
type Backoff struct {
	Base       time.Duration
	Cap        time.Duration
	Multiplier float64
}

// Delay is the random sleep before retry n.
func (b Backoff) Delay(n int) time.Duration { return line.Backoff(b).Delay(n) }

func (b Backoff) validate() error {
	if b.Base <= 0 || b.Cap < b.Base || b.Cap > maxDuration || !(b.Multiplier >= 1) || math.IsInf(b.Multiplier, 1) {
		return invalid("backoff %+v needs 0 < Base <= Cap <= %v and a finite Multiplier >= 1", b, maxDuration)
	}
	return nil
}

// optionSet is a set of options, by the function that gives each.
type optionSet uint32

const (
	optTTL optionSet = 1 << iota
	optOwner
	optAutoExtend
	optFencing
	optMaxAttempts
	optWait
	optBackoff
	optDriftFactor
	optNodeTimeout
	optKeyPrefix
	optLogger
	optNotifyConfig
	optLatchExpiry
	optIdleExpiry
	optReplicaAcks
	optObserver
	optMetadata
)

var optionNames = []string{"WithTTL", "WithOwner", "WithAutoExtend", "WithFencing", "WithMaxAttempts",
	"WithWaitStrategy", "WithBackoff", "WithDriftFactor", "WithNodeTimeout", "WithKeyPrefix",
	"WithLogger", "WithNotifyConfig", "WithLatchExpiry", "WithIdleExpiry", "WithReplicaAcks", "WithObserver", "WithMetadata"}

// applies are the options each primitive takes. WithLogger and
// WithNotifyConfig concern New only; WithOwner only the reentrant locks;
// the lease options not a Latch, which has no leases; WithMetadata not a
// MultiLock, whose leases hold many names.
var applies = func() map[string]optionSet {
	every := optTTL | optWait | optBackoff | optNodeTimeout | optKeyPrefix
	leases := every | optAutoExtend | optFencing | optMaxAttempts | optDriftFactor | optIdleExpiry | optObserver
	return map[string]optionSet{
		"Mutex": leases | optOwner | optMetadata, "MultiLock": leases | optOwner,
		"FairMutex": leases | optOwner | optMetadata, "RWMutex": leases | optOwner | optMetadata, "Semaphore": leases | optMetadata,
		"Latch": every | optLatchExpiry,
	}
}()

// options returns the Client's options overridden by opts, for a
// primitive of type what, noting which options it was given.
func (c *Client) options(what string, opts []Option) options {
	var o options
	c.optionsInto(&o, what, opts)
	return o
}

// optionsInto is options into o, for a primitive that holds them: a
// local copy would escape to the heap with each Option that sets it.
func (c *Client) optionsInto(o *options, what string, opts []Option) {
	*o = c.opts
	o.given, o.what = 0, what
	for _, opt := range opts {
		opt(o)
	}
}

// maxDuration bounds TTLs, latch expiries and the backoff cap: a year is
// more than any of them needs, and keeps expiries in milliseconds far
// within what the servers and Lua numbers hold exactly.
const maxDuration = 365 * 24 * time.Hour

// validate reports a bad name, or bad options for the primitive called
// name, before anything is written.
func (o *options) validate(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return o.check()
}

// check reports bad options: for a primitive (what), also those that do
// not apply to it. New checks its own with it. (WithOwner on a lock that
// is not reentrant is reported by Client.check, after a context that
// ended: a Client-wide owner is no error until such a lock is used.)
func (o *options) check() error {
	if extra := o.given &^ applies[o.what]; o.what != "" && extra != 0 {
		return invalid("%s does not apply to a %s; leave it out (given to New, an option is a default and applies only where it can)", extra, o.what)
	}
	switch {
	case strings.ContainsAny(o.keyPrefix, "{}"):
		return invalid("the key prefix %q holds a brace; leave braces out of prefixes: the name in braces after the prefix is the keys' hash tag", o.keyPrefix)
	case o.logger == nil:
		return invalid("nil logger; leave WithLogger out to log nowhere")
	case o.wait != Notify && o.wait != Poll:
		return invalid("unknown wait strategy %d; use Notify or Poll", int(o.wait))
	case o.ttl <= 0 || o.ttl > maxDuration:
		return invalid("TTL %v is not positive and at most %v", o.ttl, maxDuration)
	case o.ttl%time.Millisecond != 0:
		return invalid("TTL %v is not a whole number of milliseconds", o.ttl)
	case !(o.driftFactor >= 0 && o.driftFactor < 1): // NaN too
		return invalid("drift factor %v is outside [0, 1)", o.driftFactor)
	case o.ttl <= o.driftAllowance():
		return invalid("TTL %v is not above the drift allowance %v; use a longer TTL", o.ttl, o.driftAllowance())
	case o.given&optNodeTimeout != 0 && o.nodeTimeout <= 0:
		return invalid("node timeout %v is not positive; leave WithNodeTimeout out for the default", o.nodeTimeout)
	case o.given&optNodeTimeout != 0 && o.nodeTimeout < minNodeTimeout:
		return invalid("node timeout %v is below %v, faster than any server answers, so every call would fail; leave WithNodeTimeout out for the default", o.nodeTimeout, minNodeTimeout)
	case o.given&optReplicaAcks != 0 && o.replicaAcks < 0:
		return invalid("replica acks %d is negative; pass 0 to wait for no replica, or leave WithReplicaAcks out for the default", o.replicaAcks)
	case o.maxAttempts < 0:
		return invalid("max attempts %d is negative", o.maxAttempts)
	case o.idle < time.Millisecond || o.idle%time.Millisecond != 0:
		return invalid("idle expiry %v is not a positive whole number of milliseconds; pass WithIdleExpiry(10*time.Minute) or more", o.idle)
	case o.latchExpiry <= 0 || o.latchExpiry > maxDuration || o.latchExpiry%time.Millisecond != 0:
		return invalid("latch expiry %v is not a positive whole number of milliseconds up to %v", o.latchExpiry, maxDuration)
	}
	if err := checkMetadata(o.metadata); err != nil {
		return err
	}
	return o.backoff.validate()
}

// minNodeTimeout is the shortest node timeout: no server answers faster,
// even on loopback, so a shorter one would fail every call as if the
// servers were down.
const minNodeTimeout = time.Millisecond

// checkTimeout reports a node timeout not below the TTL: a request that
// took that long would leave no validity. Not part of validate, which a
// MultiLock lease's Extend calls with a timeout for its chain of names.
func (o *options) checkTimeout() error {
	if d := o.perNodeTimeout(); d >= o.ttl {
		return invalid("node timeout %v is not below the TTL %v; use a shorter one, or leave WithNodeTimeout out for the default", d, o.ttl)
	}
	return nil
}

// checkName reports a name that would not be its keys' whole hash tag:
// key puts it in braces, so a '}' in it would end the tag early (on a
// Redis Cluster a primitive's keys would then be in different slots), and
// two names could share keys.
func checkName(name string) error {
	switch {
	case name == "":
		return invalid("the name is empty; give every lock a name")
	case strings.Contains(name, "}"):
		return invalid("the name %q holds a closing brace, which would end its keys' hash tag {name} early; leave '}' out of names", name)
	}
	return nil
}

func (s optionSet) String() string {
	var names []string
	for i, n := range optionNames {
		if s&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, " and ")
}
