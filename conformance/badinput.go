package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// leaseCalls are a primitive's calls that take a lease, by name.
type leaseCalls = map[string]func(context.Context) (*core.Lease, error)

// expectInvalid checks that each call with ctx refuses the bad input that
// what names: no lease, and ErrInvalid with a message that holds says.
func expectInvalid(t *testing.T, ctx context.Context, what, says string, calls leaseCalls) {
	t.Helper()
	for op, call := range calls {
		l, err := call(ctx)
		if !errors.Is(err, core.ErrInvalid) || l != nil {
			t.Errorf("%s with %s: got (%v, %v), want ErrInvalid", op, what, l, err)
		} else if !strings.Contains(err.Error(), says) {
			t.Errorf("%s with %s: the message %q does not say what was wrong (%q)", op, what, err, says)
		}
	}
}

// badOption is an option that a lock refuses, and what it is.
type badOption struct {
	what string
	opt  core.Option
}

// expectBadLockInput checks that the calls of the lock that lock makes
// refuse the bad input every lock refuses (an empty name, a zero or
// negative TTL, a negative attempt count, a nil context) and each of more,
// on a lock called n.
func expectBadLockInput(t *testing.T, ctx context.Context, n string, lock func(name string, opts ...core.Option) leaseCalls, more ...badOption) {
	t.Helper()
	const says = "invalid argument: "
	expectInvalid(t, ctx, "an empty name", says, lock(""))
	for _, bad := range append([]badOption{
		{"a zero TTL", core.WithTTL(0)},
		{"a negative TTL", core.WithTTL(-time.Second)},
		{"a negative attempt count", core.WithMaxAttempts(-1)},
	}, more...) {
		expectInvalid(t, ctx, bad.what, says, lock(n, bad.opt))
	}
	var noContext context.Context
	expectInvalid(t, noContext, "a nil context", says, lock(n))
}

func testBadInput(t *testing.T, e env) {
	t.Run("OptionsThatCannotWork", func(t *testing.T) { testOptionsThatCannotWork(t, e) })
	t.Run("NilLease", testNilLease)
	ctx := ctxFor(t, 10*time.Second)
	if _, err := e.h.OpenNil(); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("%s.New(nil): got %v, want ErrInvalid", e.h.Driver, err)
	}
	if _, err := core.New(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("core.New with no nodes: got %v, want ErrInvalid", err)
	}
	if _, err := core.New([]core.Driver{nil}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("core.New with a nil driver: got %v, want ErrInvalid", err)
	}
	if _, err := core.New(e.drivers(t, e.addrs), core.WithBackoff(core.Backoff{})); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("core.New with a zero backoff: got %v, want ErrInvalid", err)
	}
	c := e.client(t)
	n := name(t)
	expectBadLockInput(t, ctx, n, func(name string, opts ...core.Option) leaseCalls {
		m := c.Mutex(name, opts...)
		resume := func(ctx context.Context) (*core.Lease, error) { return m.Resume(ctx, rand.Text()) }
		return leaseCalls{"TryLock": m.TryLock, "Lock": m.Lock, "Resume": resume}
	}, badOption{"a TTL below the drift allowance", core.WithTTL(2 * time.Millisecond)},
		badOption{"a TTL of a fraction of a millisecond", core.WithTTL(1500 * time.Microsecond)})
	if k, _ := e.admin(t, 0).Keys(ctx, lockKey(n)+"*").Result(); len(k) != 0 {
		t.Errorf("bad input wrote keys: %v", k)
	}

	l := mustLock(t, ctx, c.Mutex(n).TryLock)
	if err := l.Extend(ctx, -time.Second); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Extend with a negative TTL: got %v, want ErrInvalid", err)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if err := l.Unlock(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Unlock with a nil context: got %v, want ErrInvalid", err)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := l.Valid(nil); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Valid with a nil context: got %v, want ErrInvalid", err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrClosed) {
		t.Errorf("TryLock on a closed client: got %v, want ErrClosed", err)
	}
}

func testNotifyNeedsRESP3(t *testing.T, h Harness, addr string) {
	d := h.Open(t, addr)
	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Notify))
	if d.Protocol() == 3 {
		if err != nil {
			t.Fatalf("Notify over RESP3: %v", err)
		}
		c.Close()
		return
	}
	if !errors.Is(err, core.ErrNotifyUnsupported) {
		t.Fatalf("Notify over RESP%d: got %v, want ErrNotifyUnsupported", d.Protocol(), err)
	}
	for _, want := range []string{h.Driver, "RESP3", "Poll"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the RESP2 error %q does not mention %q", err, want)
		}
	}
}

// testOptionsThatCannotWork: an option value that cannot work is
// ErrInvalid at New and at every primitive's first call, and so is an
// option given to a primitive it does not apply to; nothing is sent and
// nothing panics.
func testOptionsThatCannotWork(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	backoff := func(base, limit time.Duration, multiplier float64) core.Option {
		return core.WithBackoff(core.Backoff{Base: base, Cap: limit, Multiplier: multiplier})
	}
	spy := &scriptSpy{}
	c := e.spyClient(t, spy, e.cellOptions()...)
	for _, bad := range []struct {
		what string
		opt  core.Option
	}{
		{"a backoff multiplier of NaN", backoff(time.Millisecond, time.Second, math.NaN())},
		{"a backoff multiplier of +Inf", backoff(time.Millisecond, time.Second, math.Inf(1))},
		{"a backoff cap of centuries", backoff(math.MaxInt64, math.MaxInt64, 1)},
		{"a drift factor of NaN", core.WithDriftFactor(math.NaN())},
		{"a drift factor of +Inf", core.WithDriftFactor(math.Inf(1))},
		{"a node timeout of 0", core.WithNodeTimeout(0)},
		{"a negative node timeout", core.WithNodeTimeout(-time.Second)},
		{"a node timeout of a nanosecond", core.WithNodeTimeout(time.Nanosecond)},
		{"a node timeout not below the TTL", core.WithNodeTimeout(time.Hour)},
		{"an unknown wait strategy", core.WithWaitStrategy(core.WaitStrategy(7))},
		{"a negative attempt count", core.WithMaxAttempts(-1)},
	} {
		if err := e.newWith(t, bad.opt); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("New with %s: got %v, want ErrInvalid", bad.what, err)
		}
		calls := firstCalls(ctx, c, n, bad.opt)
		calls["Mutex.Lock"] = func() error { _, err := c.Mutex(n, bad.opt).Lock(ctx); return err }
		for op, call := range calls {
			if _, err := noPanic(func() (any, error) { return nil, call() }); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s with %s: got %v, want ErrInvalid", op, bad.what, err)
			}
		}
	}
	for _, bad := range []struct {
		what string
		opt  core.Option
	}{
		{"a nil logger", core.WithLogger(nil)},
		{"a negative latch expiry", core.WithLatchExpiry(-time.Second)},
		{"a negative number of replica acks", core.WithReplicaAcks(-1)},
	} {
		if err := e.newWith(t, bad.opt); !errors.Is(err, core.ErrInvalid) {
			t.Errorf("New with %s: got %v, want ErrInvalid", bad.what, err)
		}
	}

	lease := func(_ *core.Lease, err error) error { return err }
	set := func(l *core.Latch) error { _, err := l.TrySetCount(ctx, 1); return err }
	for _, bad := range []struct {
		what, says string
		call       func() error
	}{
		{"WithOwner on a Latch", "WithOwner", func() error { return set(c.Latch(n, core.WithOwner("worker-1"))) }},
		{"WithMaxAttempts on a Latch", "WithMaxAttempts", func() error { return set(c.Latch(n, core.WithMaxAttempts(3))) }},
		{"WithAutoExtend on a Latch", "WithAutoExtend", func() error { return set(c.Latch(n, core.WithAutoExtend())) }},
		{"WithOwner on a Semaphore", "WithOwner", func() error { return lease(c.Semaphore(n, 2, core.WithOwner("worker-1")).TryAcquire(ctx, 1)) }},
		{"WithLatchExpiry on a Mutex", "WithLatchExpiry", func() error { return lease(c.Mutex(n, core.WithLatchExpiry(time.Hour)).TryLock(ctx)) }},
		{"WithLatchExpiry(-1) on a Mutex", "WithLatchExpiry", func() error { return lease(c.Mutex(n, core.WithLatchExpiry(-1)).Lock(ctx)) }},
		{"WithLatchExpiry on a FairMutex", "WithLatchExpiry", func() error { return lease(c.FairMutex(n, core.WithLatchExpiry(time.Hour)).TryLock(ctx)) }},
		{"WithLatchExpiry on a MultiLock", "WithLatchExpiry", func() error {
			return lease(c.MultiLock([]string{n}, core.WithLatchExpiry(time.Hour)).TryLock(ctx))
		}},
		{"WithLogger on a Mutex", "WithLogger", func() error { return lease(c.Mutex(n, core.WithLogger(slog.Default())).TryLock(ctx)) }},
		{"WithNotifyConfig on a Mutex", "WithNotifyConfig", func() error { return lease(c.Mutex(n, core.WithNotifyConfig(false)).TryLock(ctx)) }},
		{"WithReplicaAcks on a Mutex", "WithReplicaAcks", func() error { return lease(c.Mutex(n, core.WithReplicaAcks(1)).TryLock(ctx)) }},
		{"WithWaitStrategy(Notify) on a Poll Client's Mutex", "WithWaitStrategy", func() error {
			return lease(c.Mutex(n, core.WithWaitStrategy(core.Notify)).Lock(ctx))
		}},
	} {
		if err := bad.call(); !errors.Is(err, core.ErrInvalid) || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("%s: got %v, want ErrInvalid naming %s", bad.what, err, bad.says)
		}
	}
	if got := spy.calls.Load(); got != 0 {
		t.Errorf("options that cannot work sent %d script calls, want none", got)
	}
}

// testNilLease calls every method of the nil *Lease a failed TryLock
// returns: none panics, and each answers as for a lease no longer held.
func testNilLease(t *testing.T) {
	ctx := ctxFor(t, time.Second)
	var l *core.Lease
	for op, call := range map[string]func() error{
		"Unlock": func() error { return l.Unlock(ctx) },
		"Extend": func() error { return l.Extend(ctx, time.Second) },
		"Err":    func() error { return l.Err() },
		"Valid":  func() error { _, err := l.Valid(ctx); return err },
		"TTL":    func() error { _, err := l.TTL(ctx); return err },
		"Downgrade": func() error {
			read, err := l.Downgrade(ctx)
			if read != nil {
				return fmt.Errorf("returned a lease, %v", err)
			}
			return err
		},
		"ExtendOrRetake": func() error {
			next, err := l.ExtendOrRetake(ctx, time.Second)
			if next != nil {
				return fmt.Errorf("returned a lease, %v", err)
			}
			return err
		},
	} {
		if _, err := noPanic(func() (any, error) { return nil, call() }); !errors.Is(err, core.ErrNotHeld) {
			t.Errorf("%s on a nil *Lease: got %v, want ErrNotHeld", op, err)
		}
	}
	_, err := noPanic(func() (any, error) {
		select {
		case <-l.Done():
		default:
			t.Error("Done on a nil *Lease is not closed")
		}
		if l.Token() != 0 || l.ID() != "" || !l.Until().IsZero() {
			t.Errorf("a nil *Lease has Token %d, ID %q, Until %v; want zeros", l.Token(), l.ID(), l.Until())
		}
		return nil, nil
	})
	if err != nil {
		t.Errorf("Done, Token, ID or Until on a nil *Lease: %v", err)
	}
}

// newWith calls New over the cell's nodes with opt after the cell's
// strategy, and closes the Client it may return.
func (e env) newWith(t *testing.T, opt core.Option) error {
	c, err := noPanic(func() (any, error) { return core.New(e.drivers(t, e.addrs), core.WithWaitStrategy(e.strategy), opt) })
	if c, ok := c.(*core.Client); ok && c != nil {
		c.Close()
	}
	return err
}

// noPanic runs f, reporting a panic as an error.
func noPanic(f func() (any, error)) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f()
}
