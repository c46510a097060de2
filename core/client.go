package core

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

// Driver is one Redis node (or one Redis Cluster) seen through a client
// library; the adapters in drivers/ make one from a go-redis, redigo or
// rueidis client.
type Driver = driver.Driver

// Client binds a set of independent nodes. With one node, a primitive is
// held when that node grants it; with N nodes, when a majority (N/2+1)
// does, as Redlock specifies. A Client is safe for concurrent use.
//
// A primitive's keys are the key prefix, its name in braces, and a suffix
// ("redlock:{orders}:fence"): the name is the keys' hash tag, which keeps
// them in one Redis Cluster slot for the scripts that touch several. So a
// name must be neither empty nor hold '}', and a prefix must hold no
// brace: either would end, empty or move the hash tag, and could let two
// names share keys. The primitives' calls report such a name or prefix
// with ErrInvalid before anything is written; '{' in a name is fine.
type Client struct {
	id   string // tells this Client's queue tickets apart
	q    *quorum.Group
	opts options
	wait line.Waiter

	evictionOnce sync.Once // the servers' eviction policy is checked at the first lease (see warnEviction)
}

// New returns a Client over drivers, one per independent node. It sends
// nothing (call Ping to check the servers), so a Client made while Redis
// is down works as soon as it is back. It fails with ErrInvalid for no
// drivers, a nil one, or an option that cannot work, and, with the
// Notify wait strategy (the default), with ErrNotifyUnsupported when a
// driver cannot deliver keyspace notifications (RESP2).
func New(drivers []Driver, opts ...Option) (*Client, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	q, err := quorum.NewGroup(drivers, o.logger, o.replicaAcks)
	if err != nil {
		return nil, err
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := o.checkTimeout(); err != nil {
		return nil, err
	}
	c := &Client{id: rand.Text(), q: q, opts: o}
	cfg := line.Config{ID: c.id, Log: o.logger, SetFlags: o.notifyConfig, NodeTimeout: o.perNodeTimeout(), Poll: o.wait == Poll}
	if c.wait, err = line.New(q, cfg); err != nil {
		return nil, err
	}
	return c, nil
}

// Ping checks that the servers can serve the Client, as an application
// may at start-up to fail fast: New sends nothing, so that a Client made
// while Redis is down works as soon as it is back. Every node runs a
// read-only script (so Ping also finds a user refused EVALSHA) and, under
// Notify, is made to publish the keyspace events that waiters need
// (unless WithNotifyConfig(false)), as the Client's first wait would. It
// returns ErrNoQuorum with each node's error when a majority did not
// answer (ErrServerError when enough answered but too many refused the
// script: a user refused EVALSHA), and the context's error when it ended
// first. Else it returns what the caller may choose to ignore:
// ErrNotifyUnsupported for a server that has no keyspace notifications
// (waits go on without them), and ErrEviction for each server that may
// evict the library's keys; the Client logs both at warn level too. A
// server that refuses CONFIG (most managed services) is no error: the
// Client logs it once at warn level, with the command to run by hand,
// and waits go on without the events (see WithNotifyConfig). It costs a
// few round trips to each node.
func (c *Client) Ping(ctx context.Context) error {
	switch {
	case ctx == nil:
		return invalid("nil context; pass context.Background() or a context with a deadline")
	case c.q.Closed():
		return ErrClosed
	}
	if err := quorum.Ended(ctx); err != nil {
		return err
	}
	probe := key(c.opts, "redlock:ping", ":latch")
	replies := quorum.Fanout(ctx, c.q, c.opts.timing(), func(ctx context.Context, _ int, n *quorum.Node) (struct{}, error) {
		_, err := n.Driver.LatchRead(ctx, probe)
		return struct{}{}, err
	})
	if n, ok := c.wait.(*line.Notifier); ok {
		errs, refusal := n.Ping(ctx)
		for i, err := range errs {
			replies[i].Err = cmp.Or(replies[i].Err, err)
		}
		if err := quorum.NoQuorum(ctx, c.q, replies); err != nil {
			return err
		}
		return errors.Join(append([]error{refusal}, quorum.Evicting(ctx, c.q, c.opts.timing())...)...)
	}
	if err := quorum.NoQuorum(ctx, c.q, replies); err != nil {
		return err
	}
	return errors.Join(quorum.Evicting(ctx, c.q, c.opts.timing())...)
}

// Close stops every watchdog, every waiting call (which returns
// ErrClosed) and the client's own connections; once it returned, the
// Client sends nothing more. It leaves held locks, and the places in line
// of the calls it stopped, to expire at their TTL, and does not close the
// drivers' clients.
func (c *Client) Close() error {
	if !c.q.Close() {
		return nil
	}
	errs := []error{c.wait.Close()}
	for _, n := range c.q.Nodes {
		errs = append(errs, n.Driver.Close())
	}
	return errors.Join(errs...)
}

// check reports a closed client, a nil context, bad options, or a
// context that ended already, before anything is sent: a call whose
// context ended could not use what it wrote, only undo it.
func (c *Client) check(ctx context.Context, name string, o *options) error {
	if ctx == nil {
		return invalid("nil context; pass context.Background() or a context with a deadline")
	}
	if c.q.Closed() {
		return ErrClosed
	}
	if err := o.validate(name); err != nil {
		return err
	}
	if err := o.checkTimeout(); err != nil {
		return err
	}
	if o.wait == Notify && c.opts.wait == Poll {
		return invalid("WithWaitStrategy(Notify) given to a %s of a Client that waits by Poll; give New WithWaitStrategy(Notify), or leave it out here", o.what)
	}
	if err := quorum.Ended(ctx); err != nil {
		return err
	}
	return nil
}

// key names one of the keys of the primitive called name: the prefix, the
// hash tag, and a suffix that tells the primitive's keys apart. The name
// is the whole hash tag as long as checkName and validate accept it.
func key(o options, name, suffix string) string {
	return o.keyPrefix + "{" + name + "}" + suffix
}

// keysInto names the keys of the primitive called name, one per suffix,
// into dst, in one allocation: a primitive is made per call, and its keys
// with it.
func keysInto(dst []string, prefix, name string, suffixes ...string) {
	base := len(prefix) + len(name) + 2
	size := 0
	for _, s := range suffixes {
		size += base + len(s)
	}
	var b strings.Builder
	b.Grow(size)
	for _, s := range suffixes {
		b.WriteString(prefix)
		b.WriteByte('{')
		b.WriteString(name)
		b.WriteByte('}')
		b.WriteString(s)
	}
	all, at := b.String(), 0
	for i, s := range suffixes {
		dst[i] = all[at : at+base+len(s)]
		at += base + len(s)
	}
}

// keyOf names the keys of the primitive called name by their suffixes.
func keyOf(o options, name string) func(suffix string) string {
	return func(suffix string) string { return key(o, name, suffix) }
}

// queues returns the Client's Notifier when o waits under Notify, where a
// Mutex's and a MultiLock's waiters queue (see line.Line) and a FairMutex's,
// RWMutex's and Semaphore's tickets are told of releases.
func (c *Client) queues(o *options) (*line.Notifier, bool) {
	n, ok := c.wait.(*line.Notifier)
	return n, ok && o.wait == Notify
}

// warnEviction logs, once per Client and in the background, the servers
// that may evict the library's keys (see quorum.Evicting): at the Client's first
// lease that holds, as New sends nothing. Not sooner: the servers answer
// by then, and a cluster client that reaches no server is not kept busy
// with it while the first calls fail.
func (c *Client) warnEviction() {
	c.evictionOnce.Do(func() {
		c.q.InBackground(func() {
			ctx, cancel := context.WithTimeout(context.Background(), max(c.opts.perNodeTimeout(), time.Second))
			defer cancel()
			for _, err := range quorum.Evicting(ctx, c.q, c.opts.timing()) {
				c.opts.logger.Warn("redlock: " + err.Error())
			}
		})
	})
}
