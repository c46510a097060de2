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

// historyTotal returns how many acquisitions a fencedHistory records:
// short in a short cell, longAcquisitions in the long one.
func (e env) historyTotal(t *testing.T, short int64) int64 {
	if e.longHistory(t) {
		return longAcquisitions()
	}
	return short
}

// fencedHistory has clients compete until total acquisitions are
// recorded, each with the primitive that open makes on a fastPoll Client
// of its own, each round's call chosen by pick(primitive, i, r), and
// checks that each lease's token is above the last exclusive lease's. The
// caller checks the history against its model.
func fencedHistory[P any](t *testing.T, ctx context.Context, e env, clients int, total int64, open func(*core.Client) P, pick func(p P, i, r int) turn) *history {
	t.Helper()
	ps := make([]P, clients)
	for i := range ps {
		ps[i] = open(e.client(t, fastPoll))
	}
	h := newHistory()
	var (
		mu   sync.Mutex
		last uint64
	)
	compete(t, clients, func(i, r int) (bool, error) {
		if h.taken.Load() >= total {
			return false, nil
		}
		c := pick(ps[i], i, r)
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
