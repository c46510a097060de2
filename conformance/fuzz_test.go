package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// FuzzPublicAPI feeds names, prefixes, TTLs, counts, permits and option
// values through the public API against miniredis, given to New or to the
// primitive, and asserts that nothing panics and every call either
// succeeds or fails as it may: ErrInvalid having sent nothing to the
// server, or ErrNotAcquired, ErrNoQuorum, ErrNotHeld or the context's end
// where the input makes them legitimate. Its seeds (testdata/fuzz) run in
// every go test, and scripts/test.sh fuzzes it for 10s; to fuzz longer:
//
//	go test -run '^$' -fuzz FuzzPublicAPI -fuzztime 60s -fuzzminimizetime 5s ./conformance/
//
// (a short minimization time: minimizing the inputs that wait would
// otherwise take most of a short run).
func FuzzPublicAPI(f *testing.F) {
	srv := miniredis.RunT(f)
	f.Fuzz(func(t *testing.T, op uint8, given uint16, name, prefix, owner string,
		ttlMs, nodeTimeoutUs, expiryMs, baseUs, capUs int64, drift, multiplier float64,
		wait int8, attempts, permits, n int, count int64) {
		a := fuzzArgs{op, given, name, prefix, owner, ttlMs, nodeTimeoutUs, expiryMs, baseUs, capUs,
			drift, multiplier, wait, attempts, permits, n, count}
		// A stall of the machine longer than the node timeout fails a
		// read with an I/O timeout (ErrNoQuorum) whatever the input, and
		// the fuzzing workers load the machine in bursts: an input that
		// times out so runs up to twice more, and fails if its third run
		// times out too, as one whose script is slow does every time.
		for range 2 {
			var stalled bool
			if a.try(t, srv, &stalled); !stalled {
				return
			}
		}
		a.try(t, srv, nil)
	})
}

// fuzzArgs is one input of FuzzPublicAPI.
type fuzzArgs struct {
	op                                            uint8
	given                                         uint16
	name, prefix, owner                           string
	ttlMs, nodeTimeoutUs, expiryMs, baseUs, capUs int64
	drift, multiplier                             float64
	wait                                          int8
	attempts, permits, n                          int
	count                                         int64
}

// try runs the input on a flushed srv; with stalled set, an I/O timeout
// sets *stalled instead of failing t.
func (a fuzzArgs) try(t *testing.T, srv *miniredis.Miniredis, stalled *bool) {
	srv.FlushAll()
	// A client of its own: commands an earlier input left in flight
	// do not count as this one's.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	sent := &sentCounter{}
	rdb.AddHook(sent)
	d, err := goredis.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	in := fuzzInput{name: a.name, ttl: time.Duration(a.ttlMs) * time.Millisecond, permits: a.permits, n: a.n%20 - 2, count: a.count}
	in.stalled = stalled
	var opts []core.Option
	add := func(bit uint16, o core.Option) {
		if a.given&bit != 0 {
			opts = append(opts, o)
		}
	}
	add(1<<0, core.WithTTL(in.ttl))
	add(1<<1, core.WithNodeTimeout(time.Duration(a.nodeTimeoutUs)*time.Microsecond))
	add(1<<2, core.WithDriftFactor(a.drift))
	add(1<<3, core.WithBackoff(core.Backoff{Base: time.Duration(a.baseUs) * time.Microsecond,
		Cap: time.Duration(a.capUs) * time.Microsecond, Multiplier: a.multiplier}))
	add(1<<4, core.WithOwner(a.owner))
	add(1<<5, core.WithLatchExpiry(time.Duration(a.expiryMs)*time.Millisecond))
	add(1<<6, core.WithMaxAttempts(a.attempts))
	add(1<<7, core.WithKeyPrefix(a.prefix))
	add(1<<8, core.WithWaitStrategy(core.WaitStrategy(a.wait)))
	add(1<<9, core.WithAutoExtend())
	add(1<<10, core.WithFencing(false))
	// Slow answers are legitimate when the TTL or the node timeout is
	// short: the one given, or the default, which the TTL sets (a
	// tenth of it, at least 50ms: below 100ms for a TTL below 1s).
	ttl := 10 * time.Second
	if a.given&1 != 0 {
		ttl = in.ttl
	}
	nodeTimeout := min(max(ttl/10, 50*time.Millisecond), 500*time.Millisecond)
	if a.given&2 != 0 {
		nodeTimeout = time.Duration(a.nodeTimeoutUs) * time.Microsecond
	}
	in.slow = ttl < 200*time.Millisecond || nodeTimeout < 100*time.Millisecond ||
		a.given&(1<<2) != 0 && a.drift > 0.5
	// A call that may wait until its context ends (a slow input, or
	// ops 15 and 16, which wait on a held lock or a set latch) gets a
	// short one, to keep fuzzing fast. Any other must not wait: it
	// gets one no load on a loaded machine comes near, so that its
	// end fails the input only when the call really waited.
	deadline := 2 * time.Second
	if in.slow || a.op%18 == 15 || a.op%18 == 16 {
		deadline = 150 * time.Millisecond
	}
	// A call that outlives its context by far has hung: say which.
	hung := time.AfterFunc(deadline+10*time.Second, func() {
		panic(fmt.Sprintf("hung: op %d, options %b, name %q, prefix %q, TTL %dms, permits %d, n %d, count %d",
			a.op, a.given, a.name, a.prefix, a.ttlMs, a.permits, a.n, a.count))
	})
	defer hung.Stop()

	newOpts := []core.Option{core.WithWaitStrategy(core.Poll)}
	if a.given&(1<<15) != 0 { // the options go to New, as defaults
		newOpts, opts = append(newOpts, opts...), nil
	}
	c, err := core.New([]core.Driver{d}, newOpts...)
	if err != nil {
		if !errors.Is(err, core.ErrInvalid) && !errors.Is(err, core.ErrNotifyUnsupported) {
			t.Fatalf("New: %v", err)
		}
		if sent.all.Load() != 0 && errors.Is(err, core.ErrInvalid) {
			t.Fatalf("New sent commands before returning %v", err)
		}
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	in.run(t, ctx, sent, c, a.op, opts)
}

type fuzzInput struct {
	name       string
	ttl        time.Duration
	permits, n int
	count      int64
	slow       bool  // the input allows timeouts: ErrNoQuorum and ctx's end
	stalled    *bool // if set, an I/O timeout sets it instead of failing
}

// run makes the call op chooses, on a free primitive, and checks its error.
func (in fuzzInput) run(t *testing.T, ctx context.Context, sent *sentCounter, c *core.Client, op uint8, opts []core.Option) {
	lease := func(l *core.Lease, err error) (*core.Lease, error) { return l, err }
	var l *core.Lease
	var err error
	// Only the commands of the call checked count, not those of a setup
	// call that may still be in flight when its context ends.
	setup, call := ctx, context.WithValue(ctx, checkedCall{}, true)
	before := sent.checked.Load()
	switch op % 18 {
	case 0:
		l, err = lease(c.Mutex(in.name, opts...).TryLock(call))
	case 1:
		l, err = lease(c.Mutex(in.name, opts...).Lock(call))
	case 2:
		l, err = lease(c.FairMutex(in.name, opts...).TryLock(call))
	case 3:
		l, err = lease(c.FairMutex(in.name, opts...).Lock(call))
	case 4:
		l, err = lease(c.RWMutex(in.name, opts...).TryLock(call))
	case 5:
		l, err = lease(c.RWMutex(in.name, opts...).RLock(call))
	case 6:
		l, err = lease(c.Semaphore(in.name, in.permits, opts...).TryAcquire(call, in.n))
	case 7:
		l, err = lease(c.Semaphore(in.name, in.permits, opts...).Acquire(call, in.n))
	case 8: // set the number of permits every way, each checked as a call, then drain them
		s := c.Semaphore(in.name, 1, opts...)
		for _, set := range []struct {
			what         string
			call         func() error
			serverJudged bool // only the server knows the number AddPermits adds to
		}{
			{"SetPermits", func() error { return s.SetPermits(call, in.permits) }, false},
			{"TrySetPermits", func() error { _, err := s.TrySetPermits(call, in.permits); return err }, false},
			{"AddPermits", func() error { return s.AddPermits(call, int(in.count)) },
				in.count != 0 && in.count >= -core.MaxSemaphorePermits && in.count <= core.MaxSemaphorePermits},
		} {
			before = sent.checked.Load()
			if err = set.call(); errors.Is(err, core.ErrInvalid) && sent.checked.Load() != before && !set.serverJudged {
				t.Fatalf("%s: %v after %d commands were sent", set.what, err, sent.checked.Load()-before)
			}
			in.check(t, ctx, set.what, err)
		}
		before = sent.checked.Load()
		l, _, err = c.Semaphore(in.name, in.permits, opts...).DrainPermits(call)
	case 9:
		l, err = lease(c.MultiLock([]string{in.name, in.name + "/b"}, opts...).TryLock(call))
	case 10:
		l, err = lease(c.MultiLock([]string{in.name, in.name + "/b"}, opts...).Lock(call))
	case 11:
		_, err = c.Latch(in.name, opts...).TrySetCount(call, in.count)
	case 12:
		err = c.Latch(in.name, opts...).Wait(call)
	case 13:
		err = c.Latch(in.name, opts...).CountDown(call)
	case 14: // Extend a lease by the fuzzed TTL
		l, err = c.Mutex(in.name).TryLock(setup)
		if err == nil {
			err = l.Extend(call, in.ttl)
		}
	case 17: // read every primitive's state, each checked as a call, then ForceLock
		for _, state := range []func() error{
			func() error { _, err := c.Mutex(in.name, opts...).State(call); return err },
			func() error { _, err := c.FairMutex(in.name, opts...).State(call); return err },
			func() error { _, err := c.RWMutex(in.name, opts...).State(call); return err },
			func() error { _, err := c.Semaphore(in.name, in.permits, opts...).State(call); return err },
			func() error {
				_, err := c.MultiLock([]string{in.name, in.name + "/b"}, opts...).State(call)
				return err
			},
		} {
			before = sent.checked.Load()
			if err = state(); errors.Is(err, core.ErrInvalid) && sent.checked.Load() != before {
				t.Fatalf("State: %v after %d commands were sent", err, sent.checked.Load()-before)
			}
			in.check(t, ctx, "State", err)
		}
		before = sent.checked.Load()
		l, err = c.Mutex(in.name, opts...).ForceLock(call)
	case 15, 16: // wait, through the fuzzed backoff, on a lock held or a latch set
		holder, herr := c.Mutex(in.name).TryLock(setup)
		if herr == nil {
			defer holder.Unlock(context.Background())
		}
		c.Latch(in.name).TrySetCount(setup, 1)
		if op%18 == 15 {
			l, err = c.Mutex(in.name, opts...).Lock(call)
		} else {
			err = c.Latch(in.name, opts...).Wait(call)
		}
		if err != nil && over(ctx) {
			err = nil // it waited until the end, as it should
		}
	}
	in.check(t, ctx, "the call", err)
	if err == nil && op%18 < 14 && sent.checked.Load() == before {
		t.Fatal("a call succeeded without sending a command: the count misses its commands")
	}
	// Only the server knows a semaphore's number of permits (SetPermits
	// stores it): taking more than it has is refused there.
	serverJudged := (op%18 == 6 || op%18 == 7) && in.n > 0 && in.permits > 0
	if errors.Is(err, core.ErrInvalid) && sent.checked.Load() != before && !serverJudged {
		t.Fatalf("%v after %d commands were sent", err, sent.checked.Load()-before)
	}
	if l != nil {
		err := l.Unlock(context.Background())
		if in.ttl < time.Second && errors.Is(err, core.ErrNotHeld) {
			err = nil // a short lease may end before its Unlock
		}
		in.check(t, ctx, "Unlock", err)
	}
}

// check fails t unless err is nil or one the input makes legitimate.
func (in fuzzInput) check(t *testing.T, ctx context.Context, what string, err error) {
	switch {
	case err == nil, errors.Is(err, core.ErrInvalid), errors.Is(err, core.ErrNotAcquired):
	case in.slow && (errors.Is(err, core.ErrNoQuorum) || over(ctx)):
	case in.stalled != nil && errors.Is(err, core.ErrNoQuorum) && errors.Is(err, os.ErrDeadlineExceeded):
		*in.stalled = true
	default:
		t.Fatalf("%s: %v", what, err)
	}
}

// over reports whether ctx has ended, also once its deadline has passed
// but its timer has not fired yet: a call then already returns
// context.DeadlineExceeded (see quorum.Ended), and on a loaded
// machine ctx.Err() can stay nil for a few milliseconds more.
func over(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// checkedCall marks the context of the call whose commands sentCounter counts.
type checkedCall struct{}

// sentCounter is a go-redis hook counting the commands sent: all of them,
// and those of the checked call.
type sentCounter struct{ all, checked atomic.Int64 }

func (s *sentCounter) count(ctx context.Context, n int) {
	s.all.Add(int64(n))
	if ctx.Value(checkedCall{}) != nil {
		s.checked.Add(int64(n))
	}
}

func (s *sentCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *sentCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		s.count(ctx, 1)
		return next(ctx, cmd)
	}
}

func (s *sentCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		s.count(ctx, len(cmds))
		return next(ctx, cmds)
	}
}
