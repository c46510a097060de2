package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/redlockgo/redlock/core"
)

// faultKind is how the random fault schedules (faulthistory.go) use a
// primitive other than the Mutex: its model, and the rounds a client
// plays until done.
type faultKind struct {
	model  porcupine.Model
	rounds func(ctx context.Context, h *history, i int, c *core.Client, name string, rng *rand.Rand, done func() bool) error
	// setup, when not nil, prepares the name through a Client without
	// faults before the schedule starts.
	setup func(ctx context.Context, c *core.Client, name string) error
}

// acquisition is one lease a client tries for: what the history records
// it as, and the blocking and Try calls that take it.
type acquisition struct {
	op        leaseOp
	lock, try func(context.Context) (*core.Lease, error)
}

// semaphorePermits is the size of the random schedules' Semaphore.
const semaphorePermits = 3

var faultKinds = map[string]faultKind{
	"FairMutex": {model: capacityModel(1), rounds: leaseRounds(func(c *core.Client, n string, _ *rand.Rand, o []core.Option) acquisition {
		m := c.FairMutex(n, o...)
		return acquisition{leaseOp{}, m.Lock, m.TryLock}
	})},
	"RWMutex": {model: rwModel(), rounds: leaseRounds(func(c *core.Client, n string, rng *rand.Rand, o []core.Option) acquisition {
		m := c.RWMutex(n, o...)
		if rng.IntN(3) == 0 {
			return acquisition{leaseOp{Mode: "write"}, m.Lock, m.TryLock}
		}
		return acquisition{leaseOp{Mode: "read"}, m.RLock, m.TryRLock}
	})},
	"Semaphore": {model: capacityModel(semaphorePermits), rounds: leaseRounds(func(c *core.Client, n string, rng *rand.Rand, o []core.Option) acquisition {
		s, k := c.Semaphore(n, semaphorePermits, o...), 1+rng.IntN(2)
		return acquisition{leaseOp{Permits: k},
			func(ctx context.Context) (*core.Lease, error) { return s.Acquire(ctx, k) },
			func(ctx context.Context) (*core.Lease, error) { return s.TryAcquire(ctx, k) }}
	})},
	// MultiLocks over overlapping sets of three names, and Mutexes on
	// one, so both kinds of lease meet on each name; half of them of the
	// client's owner, which takes the names one by one.
	"MultiLock": {model: multiModel(), rounds: leaseRounds(func(c *core.Client, n string, rng *rand.Rand, o []core.Option) acquisition {
		sets := [][]string{{"a", "b"}, {"b", "c"}, {"a", "c"}, {"a", "b", "c"}, {"a"}, {"c"}}
		set := sets[rng.IntN(len(sets))]
		names := make([]string, len(set))
		for k, s := range set {
			names[k] = n + "/" + s
		}
		op := leaseOp{Names: strings.Join(slices.Sorted(slices.Values(set)), ",")}
		if rng.IntN(2) == 0 { // an owner's, taken name by name
			o = append(o, core.WithOwner(fmt.Sprintf("owner-%s-%p", n, c)))
		}
		if len(names) == 1 {
			m := c.Mutex(names[0], o...)
			return acquisition{op, m.Lock, m.TryLock}
		}
		m := c.MultiLock(names, o...)
		return acquisition{op, m.Lock, m.TryLock}
	})},
	"Latch": {model: latchModel(faultLatchCount), rounds: latchRounds, setup: func(ctx context.Context, c *core.Client, name string) error {
		if ok, err := c.Latch(name).TrySetCount(ctx, faultLatchCount); err != nil || !ok {
			return fmt.Errorf("TrySetCount(%d) on a new latch: got (%v, %v), want true", faultLatchCount, ok, err)
		}
		return nil
	}},
}

// faultLatchCount is the count of the random schedules' Latch: enough
// that it opens in the middle of a schedule, with waiters on both sides.
const faultLatchCount = 8

// latchRounds is client i's part of a Latch schedule: CountDowns, and
// Waits that give up after a while. A CountDown that failed may have
// counted on some nodes, at any time from its call on (its request can
// land late), so the history leaves it open: it returns at the end of
// time. A Wait that returned nil is a taken lease of the schedule.
func latchRounds(ctx context.Context, h *history, i int, c *core.Client, name string, rng *rand.Rand, done func() bool) error {
	l := c.Latch(name)
	for !done() {
		call := time.Now()
		if rng.IntN(3) == 0 {
			err := l.CountDown(ctx)
			ret := time.Now()
			if err != nil {
				ret = h.start.Add(24 * time.Hour)
			}
			h.add(i, latchOp{}, nil, call, ret)
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, time.Duration(50+rng.IntN(450))*time.Millisecond)
		err := l.Wait(wctx)
		cancel()
		switch {
		case err == nil:
			h.add(i, latchOp{Wait: true}, nil, call, time.Now())
			h.taken.Add(1)
		case errors.Is(err, context.DeadlineExceeded), errors.Is(err, core.ErrNoQuorum):
		default:
			return fmt.Errorf("the Latch's Wait: %w", err)
		}
	}
	return nil
}

// leaseRounds are the rounds of a client that takes the leases pick
// gives, one at a time, until done.
func leaseRounds(pick func(c *core.Client, name string, rng *rand.Rand, opts []core.Option) acquisition) func(context.Context, *history, int, *core.Client, string, *rand.Rand, func() bool) error {
	return func(ctx context.Context, h *history, i int, c *core.Client, name string, rng *rand.Rand, done func() bool) error {
		var late *core.Lease // left to expire, unlocked after the next acquisition
		defer func() {
			if late != nil {
				late.Unlock(ctx)
			}
		}()
		for !done() {
			opts := []core.Option{core.WithTTL(faultTTLs[rng.IntN(len(faultTTLs))])}
			kept := rng.IntN(3) == 0 // a watchdog keeps it held: it would not expire
			if kept {
				opts = append(opts, core.WithAutoExtend())
			}
			a := pick(c, name, rng, opts)
			lock, try := a.try, true
			if rng.IntN(2) == 0 {
				lock, try = giveUpSoon(a.lock), false
			}
			call := time.Now()
			l, err := acquire(ctx, lock)
			if late != nil {
				late.Unlock(ctx)
				late = nil
			}
			if err != nil {
				return err
			}
			if l == nil {
				time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
				continue
			}
			hd := h.acquired(i, a.op, call, l)
			h.taken.Add(1)
			h.tracef(i, "acquired %v (called at %s, try %v, kept %v): token %d, until %s", opts, h.since(call), try, kept, l.Token(), h.since(l.Until()))
			if rng.IntN(3) == 0 {
				ttl := faultTTLs[rng.IntN(len(faultTTLs))]
				err := l.Extend(ctx, ttl)
				h.tracef(i, "Extend(%v) of token %d: %v, until %s", ttl, l.Token(), err, h.since(l.Until()))
			}
			time.Sleep(time.Duration(rng.Int64N(int64(30 * time.Millisecond))))
			abandon := rng.IntN(5) == 0 && !kept
			h.tracef(i, "ends token %d (abandon %v), until %s", l.Token(), abandon, h.since(l.Until()))
			end := windowEnd(ctx, l, abandon)
			h.tracef(i, "ended token %d at %s", l.Token(), h.since(end))
			if abandon {
				late = l
				time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
			}
			hd.end(end, end, time.Now())
		}
		return nil
	}
}

// giveUpSoon is a blocking acquisition that gives up after a second.
func giveUpSoon(lock func(context.Context) (*core.Lease, error)) func(context.Context) (*core.Lease, error) {
	return func(ctx context.Context) (*core.Lease, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return lock(ctx)
	}
}
