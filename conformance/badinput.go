package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

func testBadInput(t *testing.T, e env) {
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
	for _, bad := range []struct {
		what string
		m    *core.Mutex
		ctx  context.Context
	}{
		{"an empty name", c.Mutex(""), ctx},
		{"a zero TTL", c.Mutex(n, core.WithTTL(0)), ctx},
		{"a negative TTL", c.Mutex(n, core.WithTTL(-time.Second)), ctx},
		{"a TTL below the drift allowance", c.Mutex(n, core.WithTTL(2*time.Millisecond)), ctx},
		{"a TTL of a fraction of a millisecond", c.Mutex(n, core.WithTTL(1500*time.Microsecond)), ctx},
		{"a negative attempt count", c.Mutex(n, core.WithMaxAttempts(-1)), ctx},
		{"a nil context", c.Mutex(n), nil},
	} {
		for op, call := range map[string]func(context.Context) (*core.Lease, error){"TryLock": bad.m.TryLock, "Lock": bad.m.Lock} {
			l, err := call(bad.ctx)
			if !errors.Is(err, core.ErrInvalid) || l != nil {
				t.Errorf("%s with %s: got (%v, %v), want ErrInvalid", op, bad.what, l, err)
			} else if !strings.Contains(err.Error(), "invalid argument: ") {
				t.Errorf("%s with %s: the message %q does not say what was wrong", op, bad.what, err)
			}
		}
	}
	if k, _ := e.admin(t, 0).Keys(ctx, "redlock:{"+n+"}*").Result(); len(k) != 0 {
		t.Errorf("bad input wrote keys: %v", k)
	}

	l, err := c.Mutex(n).TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, -time.Second); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("Extend with a negative TTL: got %v, want ErrInvalid", err)
	}
	if err := l.Unlock(nil); !errors.Is(err, core.ErrInvalid) { //nolint:staticcheck // a nil context is the bad input under test
		t.Errorf("Unlock with a nil context: got %v, want ErrInvalid", err)
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
