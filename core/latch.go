package core

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"
)

// Latch is a count-down latch: TrySetCount sets a count, CountDown lowers
// it, and Wait returns once it reached zero. The count-down that reaches
// zero deletes the latch, which wakes every waiter, and the latch can then
// be set again; Delete deletes it at any count, to the same effect. A
// latch that never reaches zero expires WithLatchExpiry (default 24h)
// after it was set, and its waiters then return as if it had opened. A
// Latch is safe for concurrent use and cheap: make one per name as needed.
//
// A latch with no count set is open: Wait returns at once and Count is 0,
// as for a java.util.concurrent.CountDownLatch created with 0. So set the
// count before the waiters start.
//
// With a quorum, TrySetCount, CountDown and Delete are applied on every
// node and succeed when a majority applied them; a TrySetCount that did
// not reach a majority is undone. Count returns the highest count among
// the nodes that answered (a majority at least), so it never reports the
// latch further down than a majority has seen it. Wait returns when a
// majority report it open: each count-down reached a majority, but a
// count-down that failed on some node leaves that node behind, so if
// failures left fewer than a majority at zero, Wait returns only at the
// expiry.
type Latch struct {
	c    *Client
	name string
	opts options
	key  string // hash {count, gen}; absent while no count is set
}

// Latch returns the latch called name. Options given here override the
// Client's; WithLatchExpiry is the one that matters most. Bad input is
// reported by its methods.
func (c *Client) Latch(name string, opts ...Option) *Latch {
	o := c.options("Latch", opts)
	// Wait returns when the latch opens or its context ends: a bound on
	// attempts would only add an error that means neither.
	o.maxAttempts = 0
	return &Latch{c: c, name: name, opts: o, key: key(o, name, ":latch")}
}

// Name returns the latch's name.
func (l *Latch) Name() string { return l.name }

// undoneFor is the least the mark of an undone or opened setting lives
// (see latch_unset.lua, latch_count_down.lua): its requests may be held
// back longer than a short latch expiry, and the mark is a few bytes.
const undoneFor = 24 * time.Hour

// markedFor is how long the mark of an undone or opened setting lives.
func (l *Latch) markedFor() time.Duration { return max(l.opts.latchExpiry, undoneFor) }

// opened is the key of the marks of the latch's settings that opened.
func (l *Latch) opened() string { return l.key + ":opened" }

// TrySetCount sets the count when no count is set (the latch is new,
// opened, or expired), and reports whether it did. It returns ErrInvalid
// for a count below 1 or above MaxLatchCount (the scripts count in Lua
// numbers, which hold integers exactly up to 2^53) and ErrNoQuorum when too
// few nodes answered (ErrUnavailable or ErrReplicasBehind when they could
// not serve it yet).
func (l *Latch) TrySetCount(ctx context.Context, count int64) (bool, error) {
	if err := l.check(ctx); err != nil {
		return false, err
	}
	switch {
	case count <= 0:
		return false, invalid("TrySetCount(%d) on latch %q: the count must be at least 1", count, l.name)
	case count > MaxLatchCount:
		return false, invalid("TrySetCount(%d) on latch %q: the count must be at most MaxLatchCount (2^53)", count, l.name)
	}
	// A random generation (below 2^53, which Lua numbers hold exactly) lets
	// a waiter see that the latch opened and was set again before it looked.
	gen := rand.Int64N(1<<53-1) + 1
	// The undo marks the setting where it has not landed, so that it never
	// lands after (a latch set while TrySetCount said it was not); the
	// count-down that opens the latch marks it too, so that a copy that
	// lands later does not set the opened latch again.
	undone := l.key + ":undone:" + strconv.FormatInt(gen, 10)
	replies := quorum.Fanout(ctx, l.c.q, l.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		return nd.Driver.LatchTrySet(ctx, l.key, undone, l.opened(), count, gen, l.opts.latchExpiry)
	})
	if quorum.Held(replies) >= l.c.q.Quorum {
		return true, nil
	}
	// Undo on the minority that took it, and where the answer was lost.
	quorum.Detached(ctx, l.c.q, l.opts.timing(), func(ctx context.Context, i int, nd *quorum.Node) (bool, error) {
		if r := replies[i]; r.Err == nil && !r.V {
			return false, nil
		}
		return nd.Driver.LatchUnset(ctx, l.key, undone, gen, l.markedFor())
	})
	return false, quorum.NoQuorum(ctx, l.c.q, replies)
}

// CountDown lowers the count by one; the count-down that reaches zero
// wakes every waiter. On a latch with no count set it does nothing. Each
// call counts down at most once on each node: the node keeps a small mark
// of the call as long as the marks of opened settings (WithLatchExpiry,
// at least 24 hours), and a copy of its request that the network delivers
// meanwhile (a client that resends it on a broken connection) does
// nothing, even once the latch was set again. It returns ErrNoQuorum when
// fewer than a majority applied it; its requests may still land later,
// and calling CountDown again makes a new call, so a CountDown called
// again after ErrNoQuorum may count down twice: call it again only where
// that is harmless.
func (l *Latch) CountDown(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	call := line.RandomKey(l.key, ":down:")
	replies := quorum.Fanout(ctx, l.c.q, l.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (int64, error) {
		return nd.Driver.LatchCountDown(ctx, l.key, l.opened(), call, l.markedFor())
	})
	return quorum.NoQuorum(ctx, l.c.q, replies)
}

// Delete deletes the latch on every node, whatever its count, as
// Redisson's RCountDownLatch.delete does. A deleted latch is open: its
// waiters return, as when the count reaches zero, Count is 0, and
// TrySetCount can set it again. It returns nil when a majority of nodes
// answered, whether or not a count was set; ErrNoQuorum when too few did
// (a node that did not answer may still delete the latch later),
// ErrInvalid for bad options, ErrClosed after Close, and ctx's error when
// ctx ended first. It costs one round trip: one script call per node, sent
// to all at once, each a DEL of a small hash and, where a count was set,
// a mark of its setting that refuses a late copy of its TrySetCount (with
// a purge of at most 100 lapsed marks); where the latch existed, a
// wake-up on the latch's channel wakes its waiters under Notify.
func (l *Latch) Delete(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	replies := quorum.Fanout(ctx, l.c.q, l.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (bool, error) {
		return nd.Driver.LatchDelete(ctx, l.key, l.opened(), l.markedFor())
	})
	return quorum.NoQuorum(ctx, l.c.q, replies)
}

// Count returns the count, 0 when no count is set; with a quorum, the
// highest count among the nodes that answered. It returns ErrNoQuorum
// when too few nodes answered.
func (l *Latch) Count(ctx context.Context) (int64, error) {
	if err := l.check(ctx); err != nil {
		return 0, err
	}
	replies := l.read(ctx)
	if err := quorum.NoQuorum(ctx, l.c.q, replies); err != nil {
		return 0, err
	}
	var count int64
	for _, r := range replies {
		if r.Err == nil {
			count = max(count, r.V.Count)
		}
	}
	return count, nil
}

// Wait returns nil once the latch is open: its count reached zero, or it
// expired, or it was never set; also when it opened and was set again
// while Wait was looking. It waits out nodes that fail (ErrNoQuorum,
// ErrUnavailable, ErrReplicasBehind): when ctx ends first, ctx's error is
// returned, joined with the last of them.
func (l *Latch) Wait(ctx context.Context) error {
	if err := l.check(ctx); err != nil {
		return err
	}
	gens := make([]int64, len(l.c.q.Nodes)) // the generation each node had first; 0 unknown
	o := l.opts.waiting()
	o.Woken = true // the count-down that opens the latch tells its waiters (latch_count_down.lua)
	_, err := line.Acquire(ctx, l.c.wait, o, func(ctx context.Context) (struct{}, string, time.Duration, error) {
		if err := ctx.Err(); err != nil {
			return struct{}{}, l.key, 0, err
		}
		replies := l.read(ctx)
		// Nothing but a count-down or Delete, which tell the waiters (see
		// lib/wake.lua), or the expiry opens the latch. A server deletes an
		// expired key, and notifies, only when it samples or touches it,
		// which can take seconds among many keys; a read after the expiry
		// drops it at once. So look again at the earliest expiry, and at
		// least every TTL in case a message was lost, as a Mutex waiter
		// would at its holder's TTL.
		open, recheck := 0, l.opts.ttl
		for i, r := range replies {
			switch {
			case r.Err != nil:
			case r.V.Count <= 0 || (gens[i] != 0 && r.V.Gen != gens[i]):
				open++
			default:
				if gens[i] == 0 {
					gens[i] = r.V.Gen
				}
				if r.V.TTL >= 0 {
					recheck = min(recheck, r.V.TTL)
				}
			}
		}
		if open >= l.c.q.Quorum {
			return struct{}{}, l.key, 0, nil
		}
		if err := quorum.NotWon(ctx, l.c.q, replies); !errors.Is(err, ErrNotAcquired) {
			return struct{}{}, l.key, 0, err
		}
		return struct{}{}, l.key, recheck, ErrNotAcquired
	})
	if err == nil {
		// The latch's deletion woke one waiter per Client: each one that
		// finds it open wakes the next, until all returned.
		l.c.wait.PassOn(l.key)
	}
	return err
}

func (l *Latch) read(ctx context.Context) []quorum.Reply[latchState] {
	return quorum.Fanout(ctx, l.c.q, l.opts.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (latchState, error) {
		r, err := nd.Driver.LatchRead(ctx, l.key)
		return latchState(r), err
	})
}

// latchState is one node's view of the latch.
type latchState struct {
	Count int64
	Gen   int64
	TTL   time.Duration
}

// check reports a closed client, a nil context or bad options.
func (l *Latch) check(ctx context.Context) error {
	if err := l.c.check(ctx, l.name, &l.opts); err != nil {
		return err
	}
	if d := l.opts.latchExpiry; d <= 0 || d%time.Millisecond != 0 {
		return invalid("latch expiry %v is not a positive whole number of milliseconds", d)
	}
	return nil
}
