package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"
)

// Lease is one acquisition of a primitive: its fencing token, its validity
// deadline, and the signal that it ended. It is safe for concurrent use.
// The nil *Lease that a failed acquisition returns answers as a lease no
// longer held: Unlock, Extend and Err return ErrNotHeld, Done is closed,
// and Token, ID and Until are zero.
type Lease struct {
	c        *Client
	name     string
	names    leaseNames // a MultiLock's several; name joins them
	opts     options
	hold     hold
	fence    uint64
	extended atomic.Int64 // when the last Extend round ended, in Unix nanoseconds (see hear)
	hearing  sync.Once    // hear, at the first Done

	// left, when set, takes a queued waiter's tickets out of line after
	// the lease's release (see MultiLock.lockQueued); it runs in the
	// background.
	left func(ctx context.Context)

	mu     sync.Mutex
	until  time.Time
	err    error       // nil while held; ErrNotHeld after Unlock; ErrLost once lost
	expiry *time.Timer // closes done at until unless an extension moves it
	// done and extending are made at their first use (see doneChan and
	// turn): most leases end unwatched and never extended.
	done chan struct{}
	// extending is held by one Extend round at a time, so that the servers
	// apply the rounds in the order their outcomes are recorded: an
	// earlier round's shorter TTL, answered last, would otherwise leave
	// until later than the keys' expiry.
	extending chan struct{}
}

// hold is how a lease's primitive extends and releases it on one node;
// each reports whether the node still held it.
type hold interface {
	extend(ctx context.Context, n *quorum.Node, ttl time.Duration) (bool, error)
	release(ctx context.Context, n *quorum.Node) (bool, error)
	// left is how long n still holds it, 0 when it does not; it writes
	// nothing (see Lease.TTL).
	left(ctx context.Context, n *quorum.Node) (time.Duration, error)
	id() string
}

func newLease(c *Client, names leaseNames, o options, h hold, fence uint64) *Lease {
	return &Lease{c: c, name: names.String(), names: names, opts: o, hold: h, fence: fence}
}

// doneChan is the channel Done returns, closed once the lease ended.
func (l *Lease) doneChan() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
		if l.err != nil {
			close(l.done)
		}
	}
	return l.done
}

// turn is the channel that holds an Extend round's turn (see extending).
func (l *Lease) turn() chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.extending == nil {
		l.extending = make(chan struct{}, 1)
	}
	return l.extending
}

// Token returns the fencing token: greater than every token returned before
// for this name (see the package documentation for the argument and its
// assumptions). Pass it to the resource the lock protects, which should
// reject writes carrying a token lower than one it has seen.
func (l *Lease) Token() uint64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// ID identifies the acquisition on the servers: the random token its keys
// hold (a field of the owner's lock, WithOwner). For a plain Mutex lease,
// any Client takes the lease up with it (Mutex.Resume). For a semaphore
// lease it is the permit ID, with which any Client can extend or release
// its permits (Semaphore.Extend, Semaphore.Release).
func (l *Lease) ID() string {
	if l == nil {
		return ""
	}
	return l.hold.id()
}

// Until returns the end of the validity window: the lease may be relied on
// before it, and not after it unless extended.
func (l *Lease) Until() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done is closed when the lease ends: on Unlock, or when it is lost (its
// validity ran out without an extension, or an extension or Valid found the
// key gone). With WithAutoExtend it closes before the validity deadline when a
// majority can no longer be extended: within a watchdog interval (a third
// of the TTL) of the key's removal.
//
// Under the Notify wait strategy, the first call of Done also has the
// lease listen to the keyspace events of its lock key (a Mutex's,
// FairMutex's, RWMutex writer's, each name of a MultiLock; not a reader's
// or a Semaphore permit's, whose keys are shared): when the key is
// deleted, expires, is evicted, or someone else sets its TTL, the lease
// checks itself with Valid, so Done closes within milliseconds of a
// majority's losing it. That costs a SUBSCRIBE and an UNSUBSCRIBE per
// node on the Client's subscription connections, in the background, and
// one Valid per such event (for the event of the lease's own Extend, one
// Valid a quarter second after the Extend); a lease whose Done is never
// called costs nothing. Where the servers publish no keyspace events (WithNotifyConfig
// refused by them, or false and the flags not set), Done closes as under
// Poll: at the watchdog's next extension, or at Until.
func (l *Lease) Done() <-chan struct{} {
	if l == nil {
		done := make(chan struct{})
		close(done)
		return done
	}
	l.hearing.Do(l.hear)
	return l.doneChan()
}

// Err returns nil while the lease is held, ErrLost when it was lost (also
// from its validity deadline on), and ErrNotHeld after Unlock.
func (l *Lease) Err() error {
	if l == nil {
		return ErrNotHeld
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	// The expiry timer ends the lease at the deadline, but on a busy
	// machine it may run later: the clock decides, not the timer.
	if l.err == nil && l.expiry != nil && !time.Now().Before(l.until) {
		l.endLocked(l.lost())
	}
	return l.err
}

// start arms the expiry timer and, when asked for, the watchdog.
func (l *Lease) start(until time.Time) {
	l.c.warnEviction()
	l.mu.Lock() // expire may run before AfterFunc returns
	l.observeFromNow()
	l.until = until
	l.expiry = time.AfterFunc(time.Until(until), l.expire)
	l.mu.Unlock()
	if l.opts.autoExtend {
		l.c.q.InBackground(l.watch)
	}
}

// expire runs at the validity deadline: unless an extension moved it, the
// lease is lost.
func (l *Lease) expire() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return
	}
	if left := time.Until(l.until); left > 0 {
		l.expiry.Reset(left)
		return
	}
	l.endLocked(ErrLost)
}

// lost is the lease's ErrLost, saying why where its hold knows (a
// Semaphore lease whose permits Semaphore.Release gave back).
func (l *Lease) lost() error {
	if h, ok := l.hold.(interface{ lostWhy() error }); ok {
		if err := h.lostWhy(); err != nil {
			return err
		}
	}
	return ErrLost
}

func (l *Lease) endLocked(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	l.expiry.Stop()
	if l.done != nil {
		close(l.done)
	}
	l.reportEnd(err)
}

// watch extends the lease by its TTL whenever less than two thirds of the
// TTL is left (every third of the TTL, unless an Extend by hand gave it
// more), until it ends or the client closes. A failed extension is
// retried sooner; if none reaches a majority before the validity
// deadline, expire ends the lease.
func (l *Lease) watch() {
	ttl := l.opts.ttl
	due := ttl - ttl/3 // extend when no more than this is left
	t := time.NewTimer(ttl / 3)
	defer t.Stop()
	done := l.doneChan()
	for {
		select {
		case <-done:
			return
		case <-l.c.q.Closing():
			return
		case <-t.C:
		}
		if left := time.Until(l.Until()); left > due {
			t.Reset(left - due) // a longer Extend by hand is not cut short
			continue
		}
		// The round may take until the validity deadline: a slow answer
		// that still arrives in time keeps the lease.
		ctx, cancel := context.WithDeadline(context.Background(), l.Until())
		err := l.Extend(ctx, ttl)
		cancel()
		switch {
		case errors.Is(err, ErrNotHeld), errors.Is(err, ErrClosed):
			return
		case err != nil:
			t.Reset(ttl / 10)
		default:
			t.Reset(ttl / 3)
		}
	}
}

// state reports why the lease can no longer be used, or nil.
func (l *Lease) state(ctx context.Context) error {
	if ctx == nil {
		return invalid("nil context; pass context.Background() or a context with a deadline")
	}
	if l.c.q.Closed() {
		return ErrClosed
	}
	return l.Err()
}

// Extend resets the lease's TTL on every node where it still holds the
// lock. It fails with ErrLost when a majority no longer holds it (Done
// closes), with ErrNotHeld after Unlock, and with ErrNoQuorum when too few
// nodes answered, in which case the lease stays valid until Until.
// Extensions of one lease run one at a time (the watchdog's included); one
// that waits for its turn returns ctx's error when ctx ends first.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) (err error) {
	if l == nil {
		return ErrNotHeld
	}
	if err := l.state(ctx); err != nil {
		return err
	}
	o := l.opts
	o.ttl = ttl
	if err := o.validate(l.name); err != nil {
		return err
	}
	defer l.reportExtend(ttl, &err)

	turn := l.turn()
	select {
	case turn <- struct{}{}:
		defer func() { l.extended.Store(time.Now().UnixNano()); <-turn }()
	case <-ctx.Done():
		return ctx.Err()
	}
	start := time.Now()
	replies := quorum.Vote(ctx, l.c.q, o.timing(), func(ctx context.Context, _ int, n *quorum.Node) (bool, error) {
		ok, err := l.hold.extend(ctx, n, ttl)
		return n.Extended(ctx, o.timing(), l.names.acked, ok, err)
	}, quorum.Ballot[bool]{Yes: isTrue}) // an extension that lands late only lengthens
	if quorum.Held(replies) >= l.c.q.Quorum {
		if until, ok := o.timing().ValidUntil(start); ok {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.err != nil {
				return l.err
			}
			l.until = until
			l.expiry.Reset(time.Until(until))
			return nil
		}
	}
	if err := quorum.NoQuorum(ctx, l.c.q, replies); err != nil {
		return err
	}
	if err := quorum.Unconfirmed(l.c.q, replies); err != nil {
		return err // the extension is not confirmed, nor the lease lost
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(l.lost())
	return l.err
}

// stillWanted returns what a wait won, unless ctx ended meanwhile (a
// grant heard, or an attempt in flight, as it ended): the caller has
// given up, so the lease is released at once, which hands the lock on,
// and ctx's error is returned. Nobody else will release it: where the
// release failed, it is asked again in the background, as a
// waiter's leave is (quorum.Retry), unless the lease is an owner's, whose
// release counts a hold down and so must not run twice.
func stillWanted(ctx context.Context, l *Lease, err error) (*Lease, error) {
	if err != nil || ctx.Err() == nil {
		return l, err
	}
	l.mu.Lock()
	l.endLocked(ErrNotHeld)
	l.mu.Unlock()
	bg := context.WithoutCancel(ctx)
	replies := l.release(bg, quorum.Every)
	l.leaveLine(bg)
	if l.opts.owner == "" {
		quorum.Retry(bg, l.c.q, l.opts.ttl, replies, l.release)
	}
	return nil, ctx.Err()
}

// Unlock releases the lease on every node. It returns nil when a majority
// still held it, ErrLost when the lease had lost it (expired or deleted),
// ErrNotHeld when Unlock was called before, and ErrNoQuorum when too few
// nodes answered to tell (the keys then expire at their TTL where the
// release did not reach them). It waits for every node, each up to the
// node timeout, so that afterwards the lock is free wherever it was
// released; once ctx ends and a majority answered, it returns and the
// other releases finish in the background (ctx does not cancel them).
func (l *Lease) Unlock(ctx context.Context) (err error) {
	if l == nil {
		return ErrNotHeld
	}
	if err := l.state(ctx); errors.Is(err, ErrInvalid) || errors.Is(err, ErrClosed) {
		return err
	}
	l.mu.Lock()
	prior := l.err
	l.endLocked(ErrNotHeld)
	l.mu.Unlock()
	if prior == ErrNotHeld {
		return ErrNotHeld
	}
	defer l.reportRelease(prior, &err)
	// The release waits for every node, so that the caller finds the lock
	// free on each afterwards, unless ctx ends once a majority answered: a
	// release that lands late deletes only this lease's hold. A node that
	// cannot serve it yet (a Cluster slot migrating, a failover) is asked
	// again while the hold lasts and ctx allows: after that its keys expire.
	serveUntil := l.Until()
	if d, ok := ctx.Deadline(); ok && d.Before(serveUntil) {
		serveUntil = d
	}
	replies := quorum.DetachedUntil(ctx, l.c.q, l.opts.timing(), serveUntil, func(ctx context.Context, i int, n *quorum.Node) (bool, error) {
		return l.hold.release(ctx, n)
	})
	l.leaveLine(ctx)
	switch {
	case prior != nil:
		return prior
	case quorum.Held(replies) >= l.c.q.Quorum:
		return nil
	}
	// The release ran detached from ctx: its failures are the nodes'.
	if err := quorum.NoQuorum(context.WithoutCancel(ctx), l.c.q, replies); err != nil {
		return err
	}
	if err := quorum.Unconfirmed(l.c.q, replies); err != nil {
		return err // its keys expire at their TTL where the release did not reach them
	}
	return l.lost()
}

func isTrue(v bool) bool { return v }

// release gives the hold up on the nodes where on(i) is true, even when
// ctx was cancelled (see quorum.Detached).
func (l *Lease) release(ctx context.Context, on func(int) bool) []quorum.Reply[bool] {
	return releaseOn(ctx, l.c, &l.opts, l.hold, on)
}

// leaveLine runs left, if set, after a release.
func (l *Lease) leaveLine(ctx context.Context) {
	if l.left != nil {
		l.c.q.InBackground(func() { l.left(context.WithoutCancel(ctx)) })
	}
}

// grantedLease is the lease live grants gave a waiter, valid from the
// start of its last attempt, before the grants and their TTL, once a
// majority of them are on their nodes' replicas (WithReplicaAcks). It
// returns nil when there is none or no validity is left; the waiter then
// attempts, which takes a lock granted to it as its own.
func grantedLease(ctx context.Context, c *Client, o *options, names leaseNames, t *line.Ticket, h hold) (*Lease, []bool) {
	nodes, fence, ok := t.Grants.Live(c.q.Quorum, o.fencing)
	if !ok {
		return nil, nil
	}
	if _, ok := o.timing().ValidUntil(t.Sent); !ok {
		return nil, nil
	}
	for i, err := range quorum.NotOnReplicas(ctx, c.q, o.timing(), names.acked, func(i int) bool { return nodes[i] }) {
		if err != nil {
			nodes[i] = false
		}
	}
	if quorum.Count(len(nodes), func(i int) bool { return nodes[i] }) < c.q.Quorum {
		return nil, nil
	}
	until, ok := o.timing().ValidUntil(t.Sent)
	if !ok {
		return nil, nil
	}
	l := newLease(c, names, *o, h, uint64(fence))
	l.start(until)
	return l, nodes
}

// Valid asks the servers, not the local clock, whether the lease still
// holds: whether a majority of nodes (the majority its acquisition needed)
// still hold its name with its token; every name, for a MultiLock, and
// all its permits, for a Semaphore lease. Use it right before a side
// effect that the resource cannot fence with Token. It costs one
// read-only command per node (per node and name, for a MultiLock) and
// writes nothing.
//
// When a majority no longer holds it, the lease is lost, as a failed
// Extend finds it: Done closes, Err returns ErrLost, and Valid returns
// false with a nil error. It returns ErrNoQuorum when too few nodes
// answered to tell (the lease is left as it was), and ErrNotHeld after
// Unlock.
func (l *Lease) Valid(ctx context.Context) (bool, error) {
	_, err := l.TTL(ctx)
	if errors.Is(err, ErrLost) {
		return false, nil
	}
	return err == nil, err
}

// TTL asks the servers how long the lease still holds, as Valid does: the
// remaining time that a majority of nodes still have (the quorum-th
// longest of the holding nodes'), less the allowance for clock drift that
// the acquisition keeps back, and never more than Until leaves. Once the
// lease is lost it returns 0 and ErrLost; its other errors are Valid's.
func (l *Lease) TTL(ctx context.Context) (time.Duration, error) {
	if l == nil {
		return 0, ErrNotHeld
	}
	if err := l.state(ctx); err != nil {
		return 0, err
	}
	until, replies, held := quorum.HeldUntil(ctx, l.c.q, l.opts.timing(), l.hold.left, func(d time.Duration) time.Duration { return d })
	if !until.IsZero() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err == nil && !time.Now().Before(l.until) {
			l.endLocked(l.lost())
		}
		if l.err != nil {
			return 0, l.err
		}
		return max(min(time.Until(until), time.Until(l.until)), 0), nil
	}
	if err := quorum.NoQuorum(ctx, l.c.q, replies); err != nil {
		return 0, err
	}
	if err := quorum.Unconfirmed(l.c.q, held); err != nil {
		return 0, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(l.lost())
	return 0, l.err
}

// ownExpireEcho is how long after an Extend of the lease an expire event
// on its keys may be that Extend's own: such an event is checked once the
// time is over, not at once, so that an Extend costs no check, but another
// client's write of the key meanwhile (a force-release handing it on sets
// its expiry too) is still heard soon.
const ownExpireEcho = 250 * time.Millisecond

// hear has the lease, under Notify, listen to the keyspace events of the
// keys it holds alone, and check itself on the servers (Valid) after one
// that may have removed it, so that Done closes soon after the lease is
// lost. It runs at the first call of Done: it subscribes the keys on every
// node's subscription connection of the Client (which a Client opens
// once), so a lease whose Done nobody reads costs nothing. Events that
// come while a check runs make one more check; those after the lease
// ended (its Unlock's) none.
func (l *Lease) hear() {
	// The keys that hold the lease alone: a reader's and a permit's are
	// shared, and others' extensions of them would make checks.
	h, ok := l.hold.(interface{ lockKeys() []string })
	n, notify := l.c.queues(&l.opts)
	if !ok || !notify || l.Err() != nil {
		return
	}
	keys := h.lockKeys()
	if len(keys) == 0 {
		return
	}
	o := l.opts.waiting()
	recheck := make(chan struct{}, 1)
	check := func() {
		select {
		case recheck <- struct{}{}:
		default:
		}
	}
	// echoFor is how much longer an expire event may be an Extend's own.
	echoFor := func() time.Duration {
		if len(l.turn()) > 0 {
			return ownExpireEcho // the event may have come before its reply
		}
		return ownExpireEcho - time.Since(time.Unix(0, l.extended.Load()))
	}
	var deferred atomic.Bool // a check waits for the end of an Extend's echo
	var checkLater func()
	checkLater = func() {
		if wait := echoFor(); wait > 0 {
			time.AfterFunc(wait+ownExpireEcho/10, checkLater)
			return
		}
		deferred.Store(false)
		check()
	}
	heard := func(event string) {
		switch {
		case event != "expire":
			check()
		case echoFor() <= 0:
			check()
		case deferred.CompareAndSwap(false, true):
			checkLater()
		}
	}
	done := l.doneChan()
	l.c.q.InBackground(func() {
		n.Hear(done, &o, keys, heard)
		for {
			select {
			case <-done:
				return
			case <-l.c.q.Closing():
				return
			case <-recheck:
			}
			// Bounded by the node timeout; a check without a majority's
			// answer leaves the lease as it was.
			_, _ = l.Valid(context.Background())
		}
	})
}
