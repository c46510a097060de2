package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// A plain Mutex attempt that does not wait in line takes a free name with
// SET NX and reads no mark (the uncontended path). These cases land copies
// of such attempts where the name is not free, and where the token they
// carry is a lease's, and check what SAFETY.md promises of them: a copy
// landing where another token holds takes nothing and queues nothing, one
// landing where its own token holds writes nothing, and a lease whose
// token a copy took a node under does not come back.

// copyEveryNode is a faultyClient whose first plain Mutex acquisition on
// every node also runs again at flush, as a copy sent twice.
func (e env) copyEveryNode(t *testing.T, opts ...core.Option) (*core.Client, []*faults.Driver) {
	return e.faultyClient(t, func(c faults.Call) faults.Fault {
		if c.Op == "MutexAcquire" && c.N == 1 {
			return faults.Fault{Kind: faults.Duplicate, After: time.Hour}
		}
		return faults.Fault{}
	}, opts...)
}

// nodeHold is what a node holds of a lock name: its lock key's value (as
// DUMP writes it) and expiry, and whether anyone waits in its line.
type nodeHold struct {
	dump   string
	pttl   time.Duration
	queued bool
}

func (e env) holds(t *testing.T, ctx context.Context, n string) []nodeHold {
	t.Helper()
	hs := make([]nodeHold, len(e.addrs))
	for i := range e.addrs {
		a := e.admin(t, i)
		hs[i].dump, _ = a.Dump(ctx, lockKey(n)).Result()
		hs[i].pttl = a.PTTL(ctx, lockKey(n)).Val()
		hs[i].queued = a.Exists(ctx, queueKey(n)).Val() > 0
	}
	return hs
}

// testCopyLandsUnderOtherHolder: a TryLock wins on every node and unlocks;
// a copy of its acquisition, sent twice on every node, lands while another
// lease holds the name: a plain one, an owner's (a hash), or a
// MultiLock's. The copies must leave the holder's key as it was (value,
// and an expiry never lengthened) and queue nothing; once the holder
// unlocks, the name is free at once, not held by a copy for its TTL.
func testCopyLandsUnderOtherHolder(t *testing.T, e env) {
	for kind, holder := range map[string]taker{
		"plain": tryMutex,
		"owned": takerOf((*core.Client).Mutex, (*core.Mutex).TryLock, core.WithOwner("holder")),
		"multi": func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
			return c.MultiLock([]string{n, n + "/2"}).TryLock(ctx)
		},
	} {
		t.Run(kind, func(t *testing.T) {
			ctx, n := ctxFor(t, 30*time.Second), name(t)
			w, fds := e.copyEveryNode(t, core.WithTTL(20*time.Second))
			defer flush(fds)
			l, err := w.Mutex(n).TryLock(ctx)
			if err != nil {
				t.Fatalf("TryLock: %v", err)
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("Unlock: %v", err)
			}
			h, err := holder(ctx, e.client(t, core.WithTTL(10*time.Second)), n)
			if err != nil {
				t.Fatalf("the %s holder's TryLock on the free name: %v", kind, err)
			}
			before := e.holds(t, ctx, n)
			flush(fds) // the copies land under the holder
			for i, after := range e.holds(t, ctx, n) {
				switch b := before[i]; {
				case after.dump != b.dump:
					t.Fatalf("node %d: a copy of a released TryLock's acquisition, landing under a %s lease, changed the lock key", i, kind)
				case after.pttl > b.pttl:
					t.Fatalf("node %d: a copy landing under a %s lease lengthened its expiry from %v to %v", i, kind, b.pttl, after.pttl)
				case after.queued && !b.queued:
					t.Fatalf("node %d: a copy landing under a %s lease queued a waiter", i, kind)
				}
			}
			if err := h.Unlock(ctx); err != nil {
				t.Fatalf("the %s holder's Unlock: %v", kind, err)
			}
			other, err := e.client(t).Mutex(n).TryLock(ctx)
			if err != nil {
				t.Fatalf("a TryLock right after the %s holder unlocked, the copies having landed under it (a copy holds the name for its 20s TTL?): %v", kind, err)
			}
			other.Unlock(ctx)
		})
	}
}

// testFirstCopyAndGrantedLease: under Notify a Lock's first attempt does
// not wait in line, so it reads no mark on a free name. A copy of it (sent
// twice on every node, refused by a holder) lands while the lease the
// waiter was then granted holds, after that lease's release, or after a
// ForceUnlock of it.
//
// During the lease, the copies must write nothing where it holds (its
// expiry is not lengthened), and its release frees the name at once. After the release
// they take the free name, under a token no lease has: the released lease
// stays released (Extend, Valid and TTL say ErrNotHeld), the name frees
// within the TTL, and the next lease draws a larger token. After the
// ForceUnlock they take it too, and the lease must stay lost (its Extend
// returns ErrLost): a copy carrying the token the waiter's grants name
// would bring it back on every node, for as long as it extends.
func testFirstCopyAndGrantedLease(t *testing.T, e env) {
	for _, landing := range []string{"during", "after", "forced"} {
		t.Run(landing, func(t *testing.T) {
			ctx, n := ctxFor(t, 30*time.Second), name(t)
			ttl := 10 * time.Second
			if landing == "after" {
				ttl = 2 * time.Second // the copies' hold, waited out
			}
			w, fds := e.copyEveryNode(t, core.WithTTL(ttl))
			defer flush(fds)
			h, err := tryMutex(ctx, e.client(t, core.WithTTL(10*time.Second)), n)
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
			go func() {
				time.Sleep(300 * time.Millisecond) // the waiter's first attempt was refused
				h.Unlock(context.WithoutCancel(ctx))
			}()
			l, err := w.Mutex(n).Lock(ctx)
			if err != nil {
				t.Fatalf("the waiter's Lock: %v", err)
			}
			if landing == "forced" {
				if err := e.client(t).Mutex(n).ForceUnlock(ctx); err != nil {
					t.Fatalf("ForceUnlock: %v", err)
				}
				flush(fds) // the copies land on the free name
				if err := l.Extend(ctx, ttl); !errors.Is(err, core.ErrLost) {
					t.Fatalf("Extend of a lease freed by ForceUnlock, copies of its first attempt having landed since: got %v, want ErrLost", err)
				}
				return
			}
			if landing == "after" {
				if err := l.Unlock(ctx); err != nil {
					t.Fatalf("the waiter's Unlock: %v", err)
				}
				phantomWithinTTL(t, e, ctx, n, ttl, func() {
					flush(fds)
					if err := l.Extend(ctx, ttl); !errors.Is(err, core.ErrNotHeld) {
						t.Fatalf("Extend of the released lease, copies of its first attempt having taken the name under its token: got %v, want ErrNotHeld", err)
					}
					if ok, err := l.Valid(ctx); ok || !errors.Is(err, core.ErrNotHeld) {
						t.Fatalf("Valid of the released lease, copies having taken the name under its token: got %v, %v; want false, ErrNotHeld", ok, err)
					}
					if _, err := l.TTL(ctx); !errors.Is(err, core.ErrNotHeld) {
						t.Fatalf("TTL of the released lease, copies having taken the name under its token: got %v, want ErrNotHeld", err)
					}
				})
				return
			}
			time.Sleep(500 * time.Millisecond) // a lengthening would show
			before := e.holds(t, ctx, n)
			flush(fds) // the copies land on the lease
			held := 0
			for i, after := range e.holds(t, ctx, n) {
				b := before[i]
				if b.pttl <= 0 {
					continue // granted too late: the waiter left its line there once it held
				}
				held++
				if after.dump != b.dump || after.pttl > b.pttl {
					t.Fatalf("node %d: a copy of the waiter's first attempt, landing on the lease granted to its token, wrote (expiry %v before, %v after)", i, b.pttl, after.pttl)
				}
			}
			if held < len(e.addrs)/2+1 {
				t.Fatalf("the waiter's lease holds %d of %d nodes before the copies land", held, len(e.addrs))
			}
			if err := l.Unlock(ctx); err != nil {
				t.Fatalf("the waiter's Unlock after the copies landed: %v", err)
			}
			other, err := e.client(t).Mutex(n).TryLock(ctx)
			if err != nil {
				t.Fatalf("a TryLock right after the waiter unlocked, the copies having landed on its lease: %v", err)
			}
			other.Unlock(ctx)
		})
	}
}

// testTryLockCopyAfterForceUnlock: a TryLock wins on every node, where its
// acquisition was sent twice; an operator's ForceUnlock frees the name,
// and the copies land after it, on the free name, under the lease's own
// token. The lease must stay lost, as SAFETY.md promises of a forced
// release (its next Extend returns ErrLost), not come back on every node
// for as long as it extends.
func testTryLockCopyAfterForceUnlock(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	w, fds := e.copyEveryNode(t, core.WithTTL(2*time.Second))
	defer flush(fds)
	l, err := w.Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if err := e.client(t).Mutex(n).ForceUnlock(ctx); err != nil {
		t.Fatalf("ForceUnlock: %v", err)
	}
	flush(fds) // the copies land on the free name
	if err := l.Extend(ctx, 2*time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Extend of a lease freed by ForceUnlock, copies of its acquisition having landed since: got %v, want ErrLost", err)
	}
}
