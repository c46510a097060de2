package core

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/quorum"
)

// force runs a force-release on every node at once.
func force(ctx context.Context, c *Client, o *options, op func(ctx context.Context, nd *quorum.Node) (int64, error)) error {
	replies := quorum.Fanout(ctx, c.q, o.timing(), func(ctx context.Context, _ int, nd *quorum.Node) (int64, error) {
		return op(ctx, nd)
	})
	return quorum.NoQuorum(ctx, c.q, replies)
}

// forcedKey is the forced marker of a lock key: the tokens whose hold a
// force-release freed, for as long as each had left (see lib/forced.lua).
func forcedKey(lock string) string { return lock + forcedSuffix }

const forcedSuffix = ":forced"

// errForced is the ErrLost of a lease whose hold a force-release freed.
var errForced = fmt.Errorf("%w (an operator force-released it with ForceUnlock or ForceLock; it did not expire)", ErrLost)

// forcedFlag is set once a node answered that a force-release freed the
// lease's hold; the hold's copies share it.
type forcedFlag struct{ p *atomic.Bool }

func newForcedFlag() forcedFlag { return forcedFlag{new(atomic.Bool)} }

// heard notes v, a script's answer, and reports whether it says that a
// force-release freed the hold.
func (f forcedFlag) heard(v int64) bool {
	if v != leaseForced {
		return false
	}
	if f.p != nil {
		f.p.Store(true)
	}
	return true
}

// lostWhy is errForced once a node said that a force-release freed the
// hold; else nil.
func (f forcedFlag) lostWhy() error {
	if f.p != nil && f.p.Load() {
		return errForced
	}
	return nil
}

// askForced asks n, after a release found the lock not token's, whether a
// force-release freed token's hold, and notes it in f; a failed ask
// leaves f as it was (the release still found nothing).
func (f forcedFlag) askForced(ctx context.Context, n *quorum.Node, lock, token string) {
	if forced, err := n.Driver.WasForced(ctx, forcedKey(lock), token); err == nil && forced {
		f.heard(leaseForced)
	}
}

// lockLeft is how long token still holds the lock key on n, 0 when it
// does not or a force-release freed it (noted in f); a key that someone
// made persistent holds for as long as Until allows. Where a Cluster slot
// migrates and refuses a script over the lock and its forced marker, it
// reads the lock key alone, as an extension may.
func lockLeft(ctx context.Context, n *quorum.Node, lock, token string, f forcedFlag) (time.Duration, error) {
	ttl, err := n.Driver.LockTTL(ctx, lock, forcedKey(lock), token)
	if n.Cluster && driver.IsTryAgain(err) {
		ttl, err = n.Driver.LockTTL(ctx, lock, lock, token) // the marker unread (see lock_ttl.lua)
	}
	if f.heard(ttl.Milliseconds()) {
		return 0, err
	}
	if ttl < 0 {
		return math.MaxInt32 * time.Millisecond, err
	}
	return ttl, err
}
