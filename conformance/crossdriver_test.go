package conformance

import (
	"errors"
	"testing"
	"time"

	redigoredis "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
	"github.com/redlockgo/redlock/drivers/redigo"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

// TestAcrossDrivers has Clients of the three drivers share primitives on
// one three-node quorum: the drivers run the same scripts on the same
// keys, so a waiter on one is freed by a release or count-down on another:
// a Notify waiter by a Poll Client's release at its retry, the holder's
// TTL, and by a Notify Client's release at once.
func TestAcrossDrivers(t *testing.T) {
	addrs := testenv.Nodes(t)
	if len(addrs) < 3 {
		t.Fatalf("needs three nodes in REDLOCK_TEST_NODES, got %d", len(addrs))
	}
	addrs = addrs[:3]
	gr := crossClient(t, addrs, func(a string) core.Driver {
		c := redis.NewClient(&redis.Options{Addr: a, ContextTimeoutEnabled: true})
		t.Cleanup(func() { c.Close() })
		d, err := goredis.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}, core.Notify)
	rd := crossClient(t, addrs, func(a string) core.Driver {
		p := &redigoredis.Pool{MaxIdle: 4, Dial: func() (redigoredis.Conn, error) { return redigoredis.Dial("tcp", a) }}
		t.Cleanup(func() { p.Close() })
		d, err := redigo.New(p)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}, core.Poll) // redigo speaks RESP2 only
	ru := crossClient(t, addrs, func(a string) core.Driver {
		c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{a}, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		d, err := rueidisdriver.New(c)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}, core.Notify)
	ctx, n := ctxFor(t, 20*time.Second), name(t)

	t.Run("Mutex", func(t *testing.T) {
		const pollTTL = 2 * time.Second
		held := mustLock(t, ctx, rd.Mutex(n, core.WithTTL(pollTTL)).Lock)
		if _, err := gr.Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("goredis TryLock while redigo holds: got %v, want ErrNotAcquired", err)
		}
		// Either waiter may be first in line: take them as they come.
		got := make(chan locked, 2)
		for _, m := range []*core.Mutex{gr.Mutex(n), ru.Mutex(n)} {
			go func() {
				l, err := m.Lock(ctx)
				got <- locked{l, err, time.Now()}
			}()
		}
		time.Sleep(100 * time.Millisecond)
		released := time.Now()
		if err := held.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
		last := held.Token()
		for i := range 2 {
			var l *core.Lease
			if i == 0 {
				// A Poll Client's release tells no one in line.
				r := <-got
				if r.err != nil {
					t.Fatalf("waiting Lock: %v", r.err)
				}
				if d := r.at.Sub(released); d > pollTTL+wokenWithin {
					t.Fatalf("the first waiter acquired %v after a Poll Client's release, want by the holder's TTL (%v) and %v more", d, pollTTL, wokenWithin)
				}
				l = r.l
			} else {
				l = expectWoken(t, got, released)
			}
			if l.Token() <= last {
				t.Fatalf("token %d after %d: fencing is shared across drivers and must increase", l.Token(), last)
			}
			last, released = l.Token(), time.Now()
			if err := l.Unlock(ctx); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("Latch", func(t *testing.T) {
		if ok, err := rd.Latch(n).TrySetCount(ctx, 2); !ok || err != nil {
			t.Fatalf("TrySetCount: got (%v, %v), want true", ok, err)
		}
		done := make(chan error, 3)
		for _, c := range []*core.Client{gr, rd, ru} {
			go func() { done <- c.Latch(n).Wait(ctx) }()
		}
		time.Sleep(100 * time.Millisecond)
		if err := ru.Latch(n).CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		if err := gr.Latch(n).CountDown(ctx); err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if err := <-done; err != nil {
				t.Fatalf("Wait: %v", err)
			}
		}
	})
	t.Run("SemaphoreByID", func(t *testing.T) {
		l, err := ru.Semaphore(n, 1).TryAcquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		if err := rd.Semaphore(n, 1).Release(ctx, l.ID()); err != nil {
			t.Fatalf("redigo Release of a rueidis permit by ID: %v", err)
		}
		if free, err := gr.Semaphore(n, 1).Available(ctx); err != nil || free != 1 {
			t.Fatalf("goredis Available: got (%d, %v), want 1", free, err)
		}
	})
}

// crossClient is a Client over addrs with open's driver and strategy s.
func crossClient(t *testing.T, addrs []string, open func(addr string) core.Driver, s core.WaitStrategy) *core.Client {
	var ds []core.Driver
	for _, a := range addrs {
		ds = append(ds, open(a))
	}
	c, err := core.New(ds, core.WithWaitStrategy(s), core.WithNodeTimeout(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
