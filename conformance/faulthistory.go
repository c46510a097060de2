package conformance

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// Environment variables of testRandomFaults: REDLOCK_SOAK runs schedules
// for that long per cell (a time.Duration: "10m") instead of one;
// REDLOCK_FAULT_SEED replays one schedule, whose seed is in the name of
// the subtest that failed: the same faults for the same calls, and the
// same choices of each client; how the clients interleave is the
// machine's.
const (
	soakEnv = "REDLOCK_SOAK"
	seedEnv = "REDLOCK_FAULT_SEED"
)

// A schedule's clients compete for scheduleLength, and on until they
// made minTaken acquisitions (leases left to expire and requests that
// land late hold the lock up), but no longer than maxLength.
const (
	scheduleLength = time.Second
	maxLength      = 20 * time.Second
	minTaken       = 10
)

// randomFaults is the RandomFaults case of a primitive, on the real
// servers: on miniredis, whose nodes share this process's two cores, a
// schedule's four clients add enough load to time the cell's other cases
// out.
func randomFaults(e env, primitive string) map[string]func(*testing.T, env) {
	if e.server == "miniredis" {
		return nil
	}
	return map[string]func(*testing.T, env){"RandomFaults": testRandomFaults(primitive)}
}

// testRandomFaults has competing Clients use one primitive while a seeded
// random schedule drops, delays and loses the replies of their script
// calls; then it checks the history against the primitive's model. The
// Mutex's rounds (faultRounds) mix plain leases and an owner's nested
// ones; the other primitives' (faultLeaseRounds) take the leases of
// faultKinds. Both mix TTLs, auto-extension, extensions by hand, Try and
// waiting calls that give up, and leases left to expire and unlocked late.
func testRandomFaults(primitive string) func(*testing.T, env) {
	return func(t *testing.T, e env) {
		seed, soak := uint64(time.Now().UnixNano()), time.Duration(0)
		if s := os.Getenv(seedEnv); s != "" {
			v, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				t.Fatalf("%s=%q: %v", seedEnv, s, err)
			}
			seed = v
		} else if s := os.Getenv(soakEnv); s != "" {
			d, err := time.ParseDuration(s)
			if err != nil {
				t.Fatalf("%s=%q: %v", soakEnv, s, err)
			}
			soak = d
		}
		for end := time.Now().Add(soak); ; seed++ {
			if !t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { e.faultHistory(t, seed, primitive) }) || !time.Now().Before(end) {
				return
			}
		}
	}
}

// faultHistory runs and checks one schedule.
func (e env) faultHistory(t *testing.T, seed uint64, primitive string) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay this schedule with %s=%d", seedEnv, seed)
		}
	})
	const clients = 4
	h := newHistory()
	start := time.Now()
	done := func() bool {
		run := time.Since(start)
		return run > maxLength || (run > scheduleLength && h.taken.Load() >= minTaken)
	}
	cs := make([]*core.Client, clients)
	for i := range cs {
		r := faults.Random{Seed: seed, Rate: 0.03, MaxDelay: time.Second}
		// Each client's calls have their own faults: its index is part of
		// the node's number.
		cs[i], _ = e.faultyClient(t, func(c faults.Call) faults.Fault {
			node := c.Node
			c.Node += 100 * i
			f := r.Hook(c)
			if f.Kind != faults.Pass {
				h.tracef(i, "%s on node %d (call %d): %v after %v", c.Method, node, c.N, f.Kind, f.After)
			}
			return f
		})
	}
	model, rounds := capacityModel(1), faultRounds
	if k, ok := faultKinds[primitive]; ok {
		model, rounds = k.model, k.rounds
		if k.setup != nil {
			if err := k.setup(ctx, e.client(t, core.WithNodeTimeout(time.Second)), n); err != nil {
				t.Fatal(err)
			}
		}
	}
	compete(t, clients, func(i, _ int) (bool, error) {
		err := rounds(ctx, h, i, cs[i], n, rand.New(rand.NewPCG(seed, uint64(i))), done)
		return false, err
	})
	if t.Failed() {
		return
	}
	h.checkCount(t, minTaken)
	h.check(t, model)
	if t.Failed() {
		h.logTrace(t)
	}
}

var faultTTLs = []time.Duration{300 * time.Millisecond, 700 * time.Millisecond, 1500 * time.Millisecond}

// faultRounds is client i's part of a schedule, until done. A client is
// one owner: its nested leases are one holding for the model.
func faultRounds(ctx context.Context, h *history, i int, c *core.Client, name string, rng *rand.Rand, done func() bool) error {
	owner := core.WithOwner(fmt.Sprintf("owner%d-%s", i, name))
	kept := false    // a watchdog keeps one of the leases held: it would not expire
	var chose string // the options opts chose last, for the trace
	opts := func(owned bool) []core.Option {
		ttl := faultTTLs[rng.IntN(len(faultTTLs))]
		o := []core.Option{core.WithTTL(ttl)}
		chose = fmt.Sprintf("ttl %v", ttl)
		if owned {
			o, chose = append(o, owner), chose+", owned"
		}
		if rng.IntN(3) == 0 {
			o, chose = append(o, core.WithAutoExtend()), chose+", auto-extended"
			kept = true
		}
		return o
	}
	traced := func(what string, l *core.Lease) {
		if l != nil {
			h.tracef(i, "%s: token %d (%s), %s, valid until %s", what, l.Token(), l.ID(), chose, h.since(l.Until()))
		}
	}
	var late *core.Lease // left to expire, unlocked after the next acquisition
	defer func() {
		if late != nil {
			late.Unlock(ctx)
		}
	}()
	for !done() {
		owned := rng.IntN(2) == 0
		kept = false
		call := time.Now()
		outer, err := take(ctx, c.Mutex(name, opts(owned)...), rng.IntN(2) == 0)
		if late != nil {
			h.tracef(i, "late unlock of token %d: %v", late.Token(), late.Unlock(ctx))
			late = nil
		}
		if err != nil {
			return err
		}
		if outer == nil {
			time.Sleep(time.Duration(rng.IntN(20)) * time.Millisecond)
			continue
		}
		traced("took", outer)
		hd := h.acquired(i, leaseOp{}, call, outer)
		h.taken.Add(1)
		held := []*core.Lease{outer}
		var separate *holding // an inner lease taken after the outer one's window closed
		if owned && rng.IntN(2) == 0 {
			call := time.Now()
			inner, err := take(ctx, c.Mutex(name, opts(true)...), true)
			if err != nil {
				return err
			}
			if inner != nil {
				traced("took inner", inner)
				held = append(held, inner)
				// Taken while the outer lease's window is open, its window
				// joins the outer one's: one holding. Later, its own.
				if !time.Now().Before(outer.Until()) {
					separate = h.acquired(i, leaseOp{}, call, inner)
				}
			}
		}
		if rng.IntN(3) == 0 {
			l := held[rng.IntN(len(held))]
			err := l.Extend(ctx, faultTTLs[rng.IntN(len(faultTTLs))])
			h.tracef(i, "extended token %d: %v, valid until %s", l.Token(), err, h.since(l.Until()))
		}
		hold := 30 * time.Millisecond
		if rng.IntN(4) == 0 {
			hold = 500 * time.Millisecond // past a TTL an inner lease may have cut the lock to
		}
		time.Sleep(time.Duration(rng.Int64N(int64(hold))))
		ends := make([]time.Time, len(held))
		abandon := rng.IntN(5) == 0 && !kept
		for _, k := range rng.Perm(len(held)) {
			ends[k] = windowEnd(ctx, held[k], abandon)
			h.tracef(i, "window of token %d ended at %s (abandoned %v; lease: %v)", held[k].Token(), h.since(ends[k]), abandon, held[k].Err())
		}
		if abandon {
			late = held[rng.IntN(len(held))]
			// Sometimes the keys expire too (they outlive the validity
			// by the drift allowance) before the owner takes the lock
			// again and then unlocks the expired lease.
			time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
		}
		switch {
		case separate != nil:
			hd.end(ends[0], ends[0], time.Now())
			separate.end(ends[1], ends[1], time.Now())
		case len(held) == 2:
			end := ends[0]
			if ends[1].After(end) {
				end = ends[1]
			}
			hd.end(end, end, time.Now())
		default:
			hd.end(ends[0], ends[0], time.Now())
		}
	}
	return nil
}

// acquire makes one acquisition; a lease that is not won (for whatever
// reason the faults gave) is nil. Only misuse is an error.
func acquire(ctx context.Context, lock func(context.Context) (*core.Lease, error)) (*core.Lease, error) {
	l, err := lock(ctx)
	if errors.Is(err, core.ErrInvalid) || errors.Is(err, core.ErrClosed) {
		return nil, err
	}
	return l, nil
}

// take makes one acquisition of m, with TryLock or with a Lock that gives
// up soon.
func take(ctx context.Context, m *core.Mutex, try bool) (*core.Lease, error) {
	if try {
		return acquire(ctx, m.TryLock)
	}
	return acquire(ctx, giveUpSoon(m.Lock))
}

// windowEnd ends l, by Unlock or (abandon) by waiting for it to expire,
// and returns the end of its validity window: the release call, or the
// validity deadline when that came first.
func windowEnd(ctx context.Context, l *core.Lease, abandon bool) time.Time {
	if abandon {
		<-l.Done()
		return l.Until()
	}
	call, until := time.Now(), l.Until()
	l.Unlock(ctx)
	if until.Before(call) {
		return until
	}
	return call
}
