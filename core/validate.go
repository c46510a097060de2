package core

import (
	"strings"
	"time"
)

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
)

var optionNames = []string{"WithTTL", "WithOwner", "WithAutoExtend", "WithFencing", "WithMaxAttempts",
	"WithWaitStrategy", "WithBackoff", "WithDriftFactor", "WithNodeTimeout", "WithKeyPrefix",
	"WithLogger", "WithNotifyConfig", "WithLatchExpiry", "WithIdleExpiry", "WithReplicaAcks", "WithObserver"}

// applies are the options each primitive takes. WithLogger and
// WithNotifyConfig concern New only; WithOwner only the reentrant locks;
// the lease options not a Latch, which has no leases.
var applies = func() map[string]optionSet {
	every := optTTL | optWait | optBackoff | optNodeTimeout | optKeyPrefix
	leases := every | optAutoExtend | optFencing | optMaxAttempts | optDriftFactor | optIdleExpiry | optObserver
	return map[string]optionSet{
		"Mutex": leases | optOwner, "MultiLock": leases | optOwner,
		"FairMutex": leases, "RWMutex": leases, "Semaphore": leases,
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
