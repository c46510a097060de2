package core

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Lease is one acquisition of a Mutex: its fencing token, its validity
// deadline, and the signal that it ended. It is safe for concurrent use.
type Lease struct {
	m      *Mutex
	holder string // the random token of a plain lock, the owner of a reentrant one
	fence  uint64
	done   chan struct{}

	mu     sync.Mutex
	until  time.Time
	err    error       // nil while held; ErrNotHeld after Unlock; ErrLost once lost
	expiry *time.Timer // closes done at until unless an extension moves it
}

// Token returns the fencing token: greater than every token returned before
// for this name (see the package documentation for the argument and its
// assumptions). Pass it to the resource the lock protects, which should
// reject writes carrying a token lower than one it has seen.
func (l *Lease) Token() uint64 { return l.fence }

// Until returns the end of the validity window: the lease may be relied on
// before it, and not after it unless extended.
func (l *Lease) Until() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.until
}

// Done is closed when the lease ends: on Unlock, or when it is lost (its
// validity ran out without an extension, or an extension found the key
// gone). With WithAutoExtend it closes before the validity deadline when a
// majority can no longer be extended.
func (l *Lease) Done() <-chan struct{} { return l.done }

// Err returns nil while the lease is held, ErrLost when it was lost, and
// ErrNotHeld after Unlock.
func (l *Lease) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// start arms the expiry timer and, when asked for, the watchdog.
func (l *Lease) start(until time.Time) {
	l.until = until
	l.expiry = time.AfterFunc(time.Until(until), l.expire)
	if l.m.opts.autoExtend {
		c := l.m.c
		c.watchdogs.Add(1)
		go func() {
			defer c.watchdogs.Done()
			l.watch()
		}()
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

func (l *Lease) endLocked(err error) {
	if l.err != nil {
		return
	}
	l.err = err
	l.expiry.Stop()
	close(l.done)
}

// watch extends the lease every third of its TTL until it ends or the
// client closes. A failed extension is retried sooner; if none reaches a
// majority before the validity deadline, expire ends the lease.
func (l *Lease) watch() {
	ttl := l.m.opts.ttl
	t := time.NewTimer(ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-l.done:
			return
		case <-l.m.c.closing:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), ttl/3)
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
	if l.m.c.closed.Load() {
		return ErrClosed
	}
	return l.Err()
}

// Extend resets the lease's TTL on every node where it still holds the
// lock. It fails with ErrLost when a majority no longer holds it (Done
// closes), with ErrNotHeld after Unlock, and with ErrNoQuorum when too few
// nodes answered, in which case the lease stays valid until Until.
func (l *Lease) Extend(ctx context.Context, ttl time.Duration) error {
	if err := l.state(ctx); err != nil {
		return err
	}
	o := l.m.opts
	o.ttl = ttl
	if err := o.validate(l.m.name); err != nil {
		return err
	}
	c, keys := l.m.c, l.m.keys
	start := time.Now()
	replies := fanout(ctx, c, &o, func(ctx context.Context, _ int, n *node) (int64, error) {
		if o.owner != "" {
			return n.d.ExtendOwned(ctx, keys.lock, l.holder, ttl)
		}
		return n.extend(ctx, keys.lock, l.holder, ttl)
	})
	if count(replies, 1) >= c.quorum {
		if validity := ttl - time.Since(start) - o.driftAllowance(); validity > 0 {
			l.mu.Lock()
			defer l.mu.Unlock()
			if l.err != nil {
				return l.err
			}
			l.until = start.Add(validity)
			l.expiry.Reset(validity)
			return nil
		}
	}
	if err := noQuorum(c, replies); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.endLocked(ErrLost)
	return l.err
}

// Unlock releases the lock on every node. It returns nil when a majority
// still held it, ErrLost when the lease had lost it (expired or deleted),
// ErrNotHeld when Unlock was called before, and ErrNoQuorum when too few
// nodes answered (the keys then expire at their TTL).
func (l *Lease) Unlock(ctx context.Context) error {
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
	replies := l.release(ctx, func(int) bool { return true })
	if prior != nil {
		return prior
	}
	freed := count(replies, 1)
	if l.m.opts.owner != "" {
		freed = len(replies) - count(replies, -1) - failures(replies)
	}
	if freed >= l.m.c.quorum {
		return nil
	}
	if err := noQuorum(l.m.c, replies); err != nil {
		return err
	}
	return ErrLost
}

// release runs compare-and-delete (or one hold's release, for an owner) on
// the nodes where on(i) is true, even when ctx was cancelled.
func (l *Lease) release(ctx context.Context, on func(int) bool) []reply[int64] {
	m := l.m
	return fanout(context.WithoutCancel(ctx), m.c, &m.opts, func(ctx context.Context, i int, n *node) (int64, error) {
		switch {
		case !on(i):
			return 0, nil
		case m.opts.owner != "":
			return n.d.ReleaseOwned(ctx, m.keys.lock, l.holder)
		}
		return n.release(ctx, m.keys.lock, l.holder)
	})
}

// cleanup undoes a failed attempt on every node that may have granted it:
// all of them for a plain lock (a node that timed out may have), and for
// an owner only those that granted or failed, so that holds it had before
// are not dropped.
func (l *Lease) cleanup(ctx context.Context, replies []reply[grant]) {
	l.release(ctx, func(i int) bool {
		return l.m.opts.owner == "" || replies[i].err != nil || replies[i].v.Acquired
	})
}

// makeFenceDurable raises the fencing counter to the chosen token on the
// nodes that granted, while they still hold the lock; it succeeds when a
// majority did. See the package documentation for why this makes tokens
// increase across holders.
func (l *Lease) makeFenceDurable(ctx context.Context, grants []reply[grant]) bool {
	m := l.m
	replies := fanout(ctx, m.c, &m.opts, func(ctx context.Context, i int, n *node) (int64, error) {
		if g := grants[i]; g.err != nil || !g.v.Acquired {
			return 0, nil
		}
		return n.d.FenceRaise(ctx, m.keys.lock, m.keys.fence, l.holder, int64(l.fence))
	})
	return count(replies, 1) >= m.c.quorum
}

// count is how many nodes answered v.
func count(replies []reply[int64], v int64) int {
	n := 0
	for _, r := range replies {
		if r.err == nil && r.v == v {
			n++
		}
	}
	return n
}

func failures[T any](replies []reply[T]) int {
	n := 0
	for _, r := range replies {
		if r.err != nil {
			n++
		}
	}
	return n
}
