package core

import (
	"cmp"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

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
	id     string // tells this Client's queue tickets apart
	nodes  []*node
	quorum int
	opts   options
	wait   waiter

	closed     atomic.Bool
	closing    chan struct{}  // closed by Close; stops watchdogs and waits
	background sync.WaitGroup // watchdogs, and queue clean-ups after a Lock
	sending    sync.RWMutex   // read-held by each fan-out; Close takes it to wait for them

	evictionOnce sync.Once // the servers' eviction policy is checked at the first lease (see eviction.go)
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
	if len(drivers) == 0 {
		return nil, invalid("no nodes; pass one driver per Redis node")
	}
	c := &Client{id: rand.Text(), quorum: len(drivers)/2 + 1, opts: o, closing: make(chan struct{})}
	for i, d := range drivers {
		if d == nil {
			return nil, invalid("driver %d is nil", i)
		}
		single, _ := d.(driver.SingleServer)
		replicated, _ := d.(driver.Replicated)
		if replicated == nil && o.replicaAcks > 0 {
			return nil, invalid("WithReplicaAcks(%d): the %s driver of node %d cannot wait for replicas", o.replicaAcks, d.Name(), i)
		}
		n := &node{index: len(c.nodes), d: d, log: o.logger, natives: map[driver.Native]bool{},
			singleServer: single != nil && single.SingleServer(), cluster: single != nil && !single.SingleServer(),
			replicated: replicated, replicaAcks: o.replicaAcks}
		n.acksProbed.Store(-1)
		c.nodes = append(c.nodes, n)
	}
	if err := o.check(); err != nil {
		return nil, err
	}
	if err := o.checkTimeout(); err != nil {
		return nil, err
	}
	w, err := newWaiter(c)
	if err != nil {
		return nil, err
	}
	c.wait = w
	return c, nil
}

// Ping checks that the servers can serve the Client, as an application
// may at start-up to fail fast: New sends nothing, so that a Client made
// while Redis is down works as soon as it is back. Every node runs a
// read-only script (so Ping also finds a user refused EVALSHA) and, under
// Notify, is made to publish the keyspace events that waiters need
// (unless WithNotifyConfig(false)), as the Client's first wait would. It
// returns ErrConfigRefused or ErrNotifyUnsupported when a server refuses
// them (a wait would return it too), ErrNoQuorum with each node's error
// when a majority did not answer (ErrServerError when enough answered but
// too many refused the script: a user refused EVALSHA), the context's
// error when it ended first, and else ErrEviction for each server that may evict the
// library's keys (which the caller may choose to ignore; the Client's
// first lease logs it at warn level too). It costs a few round trips to
// each node.
func (c *Client) Ping(ctx context.Context) error {
	switch {
	case ctx == nil:
		return invalid("nil context; pass context.Background() or a context with a deadline")
	case c.closed.Load():
		return ErrClosed
	}
	if err := ended(ctx); err != nil {
		return err
	}
	probe := key(c.opts, "redlock:ping", ":latch")
	replies := fanout(ctx, c, &c.opts, func(ctx context.Context, _ int, n *node) (struct{}, error) {
		_, err := n.d.LatchRead(ctx, probe)
		return struct{}{}, err
	})
	if n, ok := c.wait.(*notifier); ok {
		errs, refusal := n.ping(ctx)
		if refusal != nil {
			return refusal
		}
		for i, err := range errs {
			replies[i].err = cmp.Or(replies[i].err, err)
		}
	}
	if err := noQuorum(ctx, c, replies); err != nil {
		return err
	}
	return errors.Join(c.evicting(ctx)...)
}

// Close stops every watchdog, every waiting call (which returns
// ErrClosed) and the client's own connections; once it returned, the
// Client sends nothing more. It leaves held locks, and the places in line
// of the calls it stopped, to expire at their TTL, and does not close the
// drivers' clients.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	close(c.closing)
	// A barrier: it waits for the fan-outs sending under the read lock;
	// later ones see closed and send nothing.
	c.sending.Lock()
	//lint:ignore SA2001 the empty critical section is the barrier above
	c.sending.Unlock()
	c.background.Wait()
	var errs []error
	errs = append(errs, c.wait.close())
	for _, n := range c.nodes {
		errs = append(errs, n.d.Close())
	}
	return errors.Join(errs...)
}

// Mutex returns the lock called name. Options given here override the
// Client's for this lock. Bad options are reported by its methods.
func (c *Client) Mutex(name string, opts ...Option) *Mutex {
	o := c.options("Mutex", opts)
	return &Mutex{c: c, name: name, names: []string{name}, opts: o, keys: c.keys(o, name)}
}

// check reports a closed client, a nil context, bad options, or a
// context that ended already, before anything is sent: a call whose
// context ended could not use what it wrote, only undo it.
func (c *Client) check(ctx context.Context, name string, o *options) error {
	if ctx == nil {
		return invalid("nil context; pass context.Background() or a context with a deadline")
	}
	if c.closed.Load() {
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
	if err := ended(ctx); err != nil {
		return err
	}
	if o.owner != "" && (o.what == "FairMutex" || o.what == "RWMutex") {
		return invalid("%s is not reentrant: WithOwner(%q) applies to Mutex only; pass WithOwner(\"\") to override a Client default", o.what, o.owner)
	}
	return nil
}

// keyNames are the keys of one primitive; they share the hash tag {name},
// so every script touches one Redis Cluster slot.
type keyNames struct {
	lock, fence string
	queue       string // the Notify wait queue; see notify_queue.go
	noTicket    string // stands for the ticket of an attempt that does not queue
}

func (c *Client) keys(o options, name string) keyNames {
	k := keyOf(o, name)
	return keyNames{lock: k(""), fence: k(":fence"), queue: k(":q"), noTicket: k(ticketInfix)}
}

// key names one of the keys of the primitive called name: the prefix, the
// hash tag, and a suffix that tells the primitive's keys apart. The name
// is the whole hash tag as long as checkName and validate accept it.
func key(o options, name, suffix string) string {
	return o.keyPrefix + "{" + name + "}" + suffix
}

// keyOf names the keys of the primitive called name by their suffixes.
func keyOf(o options, name string) func(suffix string) string {
	return func(suffix string) string { return key(o, name, suffix) }
}

// reply is one node's answer in a fan-out.
type reply[T any] struct {
	v   T
	err error
}

// fanout runs op on every node at once, each request bounded by the node
// timeout, and returns the replies in node order. An attempt thus costs the
// slowest node's round trip, not the sum of all. Once Close began it sends
// nothing: every reply is ErrClosed.
func fanout[T any](ctx context.Context, c *Client, o *options, op func(ctx context.Context, i int, n *node) (T, error)) []reply[T] {
	return vote(ctx, c, o, op, ballot[T]{})
}

// straggleFor is the least a decided vote waits for the nodes still out.
const straggleFor = time.Millisecond

// errNoAnswerYet stands for the reply of a node that a vote did not wait
// for: its request is still in flight, and may land or not.
var errNoAnswerYet = errors.New("no answer yet: a majority answered first")

// ballot says how vote reads a round and how long it waits for the nodes
// still out once the round is decided.
type ballot[T any] struct {
	// yes tells whether a node's answer counts toward the outcome; nil
	// waits for every node (fanout).
	yes func(T) bool
	// splitFails marks an acquisition attempt: a majority that answered at
	// all decides it, and split between yes and no it fails (it is undone
	// and tried again) once the nodes still out had a tenth of the node
	// timeout to break the tie, rather than wait for a stalled node.
	splitFails bool
	// agree, when not nil, groups the yes answers: only those that agree
	// on a value (a Semaphore's slots) count together toward a majority.
	agree func(T) int64
	// patient makes a round wait for every node until until closes (for
	// good when it is nil); once it closed and a majority answered, decided
	// or not, the others get as long as that majority took to answer (at
	// least straggleFor). A release waits so, for
	// its caller's context: after it, every node that answers has released,
	// and a context that ended bounds it even when the answers split.
	patient bool
	until   <-chan struct{}
	// serveUntil, when not zero, has a Cluster node that answers it cannot
	// serve the call yet (driver.IsTransient: a slot migrating, a
	// failover) asked again until then, until Close, or once until closed
	// until the node timeout, each try within the node timeout: a
	// release, worth retrying while its hold lasts. Otherwise, and on
	// independent masters, the retries end with the node timeout.
	serveUntil time.Time
	// late, when not nil, gets the reply of each node still out when vote
	// returned, in the background.
	late func(i int, r reply[T])
}

// vote is fanout for a round whose outcome a majority decides: once a
// majority answered yes, or so many answered no (without an error) that a
// majority cannot, it waits for the others only as long again as that took
// (at least straggleFor; see ballot for the other rules), so that a
// healthy round still hears every node. The replies of those still out
// are then errNoAnswerYet; their requests finish in the background (Close
// waits for them). A stalled node (paused, or behind a partition that
// drops packets) then costs a round about one round trip, where waiting
// would cost every round the node timeout.
func vote[T any](ctx context.Context, c *Client, o *options, op func(ctx context.Context, i int, n *node) (T, error), b ballot[T]) []reply[T] {
	out := make([]reply[T], len(c.nodes))
	c.sending.RLock()
	if c.closed.Load() {
		c.sending.RUnlock()
		for i := range out {
			out[i].err = ErrClosed
		}
		return out
	}
	call := func(i int) reply[T] {
		try := o.perNodeTimeout()
		first := time.Now().Add(try)
		serve := b.serveUntil
		if !c.nodes[i].cluster {
			serve = time.Time{} // an independent master that refuses is not changing
		}
		nctx, cancel := context.WithDeadline(ctx, later(serve, first))
		defer cancel()
		if serve.After(first) {
			// Past the node timeout, the retries end with Close, or once
			// the caller gave up (until).
			go func() {
				select {
				case <-c.closing:
				case <-b.until:
					t := time.NewTimer(time.Until(first))
					defer t.Stop()
					select {
					case <-t.C:
					case <-nctx.Done():
					}
				case <-nctx.Done():
				}
				cancel()
			}()
		}
		r := retryTransient(nctx, c.nodes[i], func(ctx context.Context) (T, error) {
			ctx, cancel := context.WithTimeout(ctx, try)
			defer cancel()
			return op(ctx, i, c.nodes[i])
		})
		c.nodes[i].heard(r.err)
		return r
	}
	if len(c.nodes) == 1 {
		out[0] = call(0)
		c.sending.RUnlock()
		return out
	}
	type answer struct {
		i int
		r reply[T]
	}
	answers := make(chan answer, len(c.nodes))
	for i := range c.nodes {
		go func() { answers <- answer{i, call(i)} }()
	}
	answered := make([]bool, len(c.nodes))
	ayes, noes := map[int64]int{}, 0 // yes answers by what they agree on
	start := time.Now()
	var (
		decided  bool
		straggle <-chan time.Time // runs once decided
		until    <-chan struct{}  // b.until once a majority answered, if patient
		majority time.Duration    // how long it took a majority to answer, if patient
	)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	wait := func(d time.Duration) { // once: a vote is decided once
		timer = time.NewTimer(d)
		straggle = timer.C
	}
	// stop gives up on the nodes still out, which finish in the background.
	stop := func(left int) []reply[T] {
		for i := range out {
			if !answered[i] {
				out[i].err = errNoAnswerYet
			}
		}
		// Added under the read lock, before Close can wait: Close waits
		// for the stragglers through background, so late may wait for its
		// caller's next round without holding up Close's barrier, which
		// would hold that round up.
		c.background.Add(1)
		c.sending.RUnlock()
		go func() {
			defer c.background.Done()
			for range left {
				if a := <-answers; b.late != nil {
					b.late(a.i, a.r)
				}
			}
		}()
		return out
	}
	for left := len(c.nodes); left > 0; left-- {
		var a answer
		select {
		case a = <-answers:
		case <-straggle:
			return stop(left)
		case <-until: // patient, and a majority answered
			wait(max(straggleFor, majority))
			until = nil
			left++ // no answer taken
			continue
		}
		out[a.i], answered[a.i] = a.r, true
		if b.yes == nil {
			continue
		}
		switch {
		case a.r.err != nil: // decides nothing: the error to report needs the others
		case b.yes(a.r.v):
			var group int64
			if b.agree != nil {
				group = b.agree(a.r.v)
			}
			ayes[group]++
		default:
			noes++
		}
		most, yes := 0, 0
		for _, n := range ayes {
			most, yes = max(most, n), yes+n
		}
		switch {
		case decided:
		case b.patient && yes+noes >= c.quorum:
			decided, until, majority = true, b.until, time.Since(start)
		case b.patient:
		case most >= c.quorum || noes > len(c.nodes)-c.quorum:
			decided = true
			wait(max(straggleFor, time.Since(start)))
		case b.splitFails && yes+noes >= c.quorum:
			// Split: the nodes still out may still break the tie, and
			// get a tenth of the node timeout for it, not all of it.
			decided = true
			wait(max(straggleFor, time.Since(start), o.perNodeTimeout()/10))
		}
	}
	c.sending.RUnlock()
	return out
}

// retryTransient runs op on n until it returns something else than an
// error that says the server did not run it (n.unserved: as while a
// Cluster slot migrates or a master fails over), or ctx ends, waiting a
// little longer each time. A call cut short by ctx after such an error
// says both (errWasChanging). op must be one server call, or calls that
// may run again (see multiHold).
func retryTransient[T any](ctx context.Context, n *node, op func(context.Context) (T, error)) reply[T] {
	var last error // the last transient reply
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		v, err := op(ctx)
		if !n.unserved(err) {
			if err != nil && last != nil && ctx.Err() != nil {
				err = fmt.Errorf("%w (%w: %v)", err, errWasChanging, last)
			}
			return reply[T]{v, err}
		}
		last = err
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return reply[T]{v, err}
		case <-t.C:
		}
	}
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// errWasChanging marks the error of a call whose node had answered that
// it could not serve it yet (driver.IsTransient) before the call failed
// otherwise, as when its node timeout ended during a retry.
var errWasChanging = errors.New("the node answered before that it cannot serve this yet")

// detached runs op on every node, for what must be done even when ctx
// was cancelled (an undo, a waiter leaving the line): detached from ctx,
// it waits for every node, each up to the node timeout, but once ctx
// ended and a majority answered it waits for no stalled node (see
// ballot.patient); the replies of those are errNoAnswerYet.
func detached[T any](ctx context.Context, c *Client, o *options, op func(ctx context.Context, i int, n *node) (T, error)) []reply[T] {
	return detachedUntil(ctx, c, o, time.Time{}, op)
}

// detachedUntil is detached, where a node that cannot serve the call yet
// is asked again until serveUntil (see ballot).
func detachedUntil[T any](ctx context.Context, c *Client, o *options, serveUntil time.Time, op func(ctx context.Context, i int, n *node) (T, error)) []reply[T] {
	return vote(context.WithoutCancel(ctx), c, o, op, ballot[T]{yes: func(T) bool { return true }, patient: true, until: ctx.Done(), serveUntil: serveUntil})
}

// notWon is the error of an acquisition attempt that did not win:
// ErrNoQuorum when too few nodes answered (ErrServerError when enough
// answered, some with an error reply), ctx's error when ctx ended
// during the attempt (a grant may have been lost to it, for example while
// the fencing token was made durable), and ErrNotAcquired otherwise.
func notWon[T any](ctx context.Context, c *Client, replies []reply[T]) error {
	if err := noQuorum(ctx, c, replies); err != nil {
		return err
	}
	if err := ended(ctx); err != nil {
		return err
	}
	return ErrNotAcquired
}

// ended returns ctx's error, also once its deadline has passed but its
// timer has not fired yet: a client that sets its socket deadline from ctx
// (go-redis with ContextTimeoutEnabled) fails with an I/O timeout a moment
// before ctx reports DeadlineExceeded.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

// nodeErrors joins the nodes' errors, each naming its node.
func nodeErrors[T any](c *Client, replies []reply[T]) error {
	var errs []error
	for i, r := range replies {
		if r.err != nil {
			errs = append(errs, c.nodeError(i, r.err))
		}
	}
	return errors.Join(errs...)
}

// nodeError is node i's error, naming the node.
func (c *Client) nodeError(i int, err error) error {
	return fmt.Errorf("node %d (%s): %w", i, c.nodes[i].d.Name(), err)
}

// noQuorum reports whether so many nodes failed that a majority is out of
// reach, joining their errors under ErrNoQuorum when too few nodes
// answered at all, and under ErrServerError when enough answered but some
// with an error reply (a script refused, WRONGTYPE): the servers are up,
// and the message says what they answered. When the Client closed or ctx
// ended, the nodes failed because of it: ErrClosed or ctx's error is
// returned instead, so that a caller can tell its own doing from
// unreachable nodes.
func noQuorum[T any](ctx context.Context, c *Client, replies []reply[T]) error {
	var errs []error
	refused, transient := 0, 0
	for i, r := range replies {
		if r.err != nil {
			switch {
			case c.nodes[i].changing(r.err):
				transient++
			case c.nodes[i].d.IsServerError(r.err):
				refused++
			}
			errs = append(errs, c.nodeError(i, r.err))
		}
	}
	if len(c.nodes)-len(errs) >= c.quorum {
		return nil
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if err := ended(ctx); err != nil {
		return err
	}
	if len(c.nodes)-len(errs)+refused >= c.quorum {
		return errors.Join(append([]error{ErrServerError}, errs...)...)
	}
	hint := errUnreachable
	if transient > 0 && len(c.nodes)-len(errs)+refused+transient >= c.quorum {
		hint = errChanging
	}
	return errors.Join(append([]error{ErrNoQuorum, hint}, errs...)...)
}

// retryable reports whether a waiting call tries again after an attempt
// that failed with err: not acquired, or not served yet (errChanging).
func retryable(err error) bool {
	return errors.Is(err, ErrNotAcquired) || errors.Is(err, errChanging)
}
