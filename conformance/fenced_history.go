package conformance

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// turn is what one client does in one round of a fencedHistory.
type turn struct {
	lock      func(context.Context) (*core.Lease, error)
	op        leaseOp
	try       bool          // a Try call, which may not win
	exclusive bool          // a lease no other shares: the next ones' tokens are above its
	hold      time.Duration // how long it is held before its release
}

// fencedHistory has clients compete until total acquisitions are
// recorded, each round's call chosen by pick(i, r), and checks that each
// lease's token is above the last exclusive lease's. The caller checks the
// history against its model.
func fencedHistory(t *testing.T, ctx context.Context, clients int, total int64, pick func(i, r int) turn) *history {
	t.Helper()
	h := newHistory()
	var (
		mu   sync.Mutex
		last uint64
	)
	compete(t, clients, func(i, r int) (bool, error) {
		if h.taken.Load() >= total {
			return false, nil
		}
		c := pick(i, r)
		l, held, ok, err := h.take(ctx, i, c.op, c.try, underLoad(c.lock))
		if !ok {
			return err == nil, err
		}
		mu.Lock()
		above := l.Token() > last
		if c.exclusive {
			last = l.Token()
		}
		mu.Unlock()
		time.Sleep(c.hold)
		if err := held.unlock(ctx, l); err != nil || above {
			return err == nil, err
		}
		return false, errors.New("a lease's token is not above the last exclusive lease's: fencing did not increase")
	})
	return h
}
