package conformance

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// badFences are fencing counters that no draw or raise writes. A Lua
// number is a double: tonumber takes "1e20", "nan" and "1.5", and above
// 2^53 (9007199254740992) it gives the same number for two integers, so
// a draw from any of these would give token 0, repeat a token, or go
// backwards. leadingZero is one INCR refuses: a script that took it for
// a counter would fail at its draw, after it wrote.
var badFences = []string{"abc", "1e20", "9007199254740993", "nan", "-5", "1.5", leadingZero}

// leadingZero is a counter with a leading zero. miniredis's INCR takes it,
// unlike Redis's and Valkey's, so there an uncontended draw does too.
const leadingZero = "01"

// fenceCases are the cases of a malformed fencing counter for primitive
// p; the strategy does not change an acquisition that does not wait, so
// they run under Poll, and the hand-on to a queued waiter under Notify.
func fenceCases(e env, p string) map[string]func(*testing.T, env) {
	cases := map[string]func(*testing.T, env){}
	if e.strategy == core.Poll {
		takers := map[string]map[string]taker{
			"Mutex": {
				"Plain": tryMutex,
				"Owned": takerOf((*core.Client).Mutex, (*core.Mutex).TryLock, core.WithOwner("a")),
			},
			"MultiLock": {"": func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.MultiLock([]string{n + "-a", n}).TryLock(ctx)
			}},
			"FairMutex": {"": tryFair},
			"RWMutex":   {"Write": tryWriter, "Read": tryReader},
			"Semaphore": {"": func(ctx context.Context, c *core.Client, n string) (*core.Lease, error) {
				return c.Semaphore(n, 2).TryAcquire(ctx, 1)
			}},
		}[p]
		fence := fenceKey
		if p == "Semaphore" {
			fence = func(n string) string { return semKey(n, ":fence") }
		}
		for kind, take := range takers {
			cases["HostileFenceCounter"+kind] = testHostileFence(take, fence)
		}
		if p == "Mutex" {
			cases["HostileFenceOwnedLapsedTicket"] = testHostileFenceOwnedLapsedTicket
		}
	}
	if e.strategy == core.Notify && p == "Mutex" {
		cases["HostileFenceHandOn"] = testHostileFenceHandOn
	}
	return cases
}

// testHostileFence seeds the fencing counter fence(n) of a fresh name with
// each of badFences on every node. The acquisition must fail with
// ErrServerError naming the counter and write nothing: with the undo of
// the failed attempt held back, the nodes hold what they held before.
// Once the counter is deleted, it succeeds.
func testHostileFence(take taker, fence func(string) string) func(*testing.T, env) {
	return func(t *testing.T, e env) {
		ctx := ctxFor(t, 30*time.Second)
		var noUndo atomic.Bool
		c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if noUndo.Load() && !strings.Contains(call.Op, "Acquire") {
				return faults.Fault{Kind: faults.Drop}
			}
			return faults.Fault{}
		}, core.WithNodeTimeout(time.Second), core.WithTTL(5*time.Second))
		for _, bad := range badFences {
			if bad == leadingZero && e.server == "miniredis" {
				continue
			}
			n := name(t) + "-" + bad
			e.everyNode(t, func(r redis.UniversalClient) error { return r.Set(ctx, fence(n), bad, time.Minute).Err() })
			before := e.nameState(t, ctx, n)
			noUndo.Store(true)
			l, err := take(ctx, c, n)
			switch {
			case err == nil:
				l.Unlock(ctx)
				t.Fatalf("counter %q: acquired with token %d, want ErrServerError", bad, l.Token())
			case !errors.Is(err, core.ErrServerError) || !strings.Contains(err.Error(), fence(n)):
				t.Fatalf("counter %q: %v; want ErrServerError naming %s", bad, err, fence(n))
			}
			if after := e.nameState(t, ctx, n); !maps.Equal(before, after) {
				t.Fatalf("counter %q: the refused attempt wrote: the nodes held %v, now %v", bad, before, after)
			}
			noUndo.Store(false)
			e.everyNode(t, func(r redis.UniversalClient) error { return r.Del(ctx, fence(n)).Err() })
			if err := takeAndRelease(ctx, func(ctx context.Context) (*core.Lease, error) { return take(ctx, c, n) }); err != nil {
				t.Fatalf("counter %q deleted: %v", bad, err)
			}
		}
	}
}

// testHostileFenceHandOn has a waiter queued when the counter goes bad
// (each of "nan", which no number reads, and "01", which INCR refuses):
// the holder's Unlock still frees the name (it cannot grant, so it wakes
// the waiter instead), and the waiter's Lock returns ErrServerError naming
// the counter at once, not at the holder's TTL.
func testHostileFenceHandOn(t *testing.T, e env) {
	for _, bad := range []string{"nan", leadingZero} {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		opts := []core.Option{core.WithTTL(time.Minute)}
		held := mustLock(t, ctx, e.hostileClient(t, opts...).Mutex(n).TryLock)
		waiter := startTaking(ctx, waitMutex, e.hostileClient(t, opts...), n)
		for e.card(t, ctx, queueKey(n)) == 0 {
			if ctx.Err() != nil {
				t.Fatal("the waiter never queued")
			}
			time.Sleep(10 * time.Millisecond)
		}
		e.everyNode(t, func(r redis.UniversalClient) error { return r.Set(ctx, fenceKey(n), bad, time.Minute).Err() })
		if err := held.Unlock(ctx); err != nil {
			t.Fatalf("counter %q: Unlock with a waiter: %v; the release must not be lost", bad, err)
		}
		select {
		case w := <-waiter:
			if w.err == nil {
				w.l.Unlock(ctx)
				t.Fatalf("counter %q: the waiter holds with token %d over a malformed counter", bad, w.l.Token())
			}
			if !errors.Is(w.err, core.ErrServerError) || !strings.Contains(w.err.Error(), fenceKey(n)) {
				t.Fatalf("counter %q: the waiter's Lock: %v; want ErrServerError naming %s", bad, w.err, fenceKey(n))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("counter %q: the waiter was not woken by the release (it would wait for the holder's TTL)", bad)
		}
		if on := e.onNodes(t, ctx, lockKey(n)); on != 0 {
			t.Fatalf("counter %q: the lock is still held on %d nodes after the release", bad, on)
		}
	}
}

// nameState is what the nodes hold of name n: each key with its type,
// for a string its value, and its expiry (PEXPIRETIME, ms since the
// epoch; not on miniredis, which keeps a TTL and answers it from its
// clock, a millisecond apart from one call to the next).
func (e env) nameState(t *testing.T, ctx context.Context, n string) map[string]string {
	t.Helper()
	state := map[string]string{}
	for i := range e.addrs {
		r := e.admin(t, i)
		for _, k := range e.keysUnder(t, ctx, i, lockKey(n)) {
			kind, err := r.Type(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			v := kind
			if kind == "string" {
				v, _ = r.Get(ctx, k).Result()
			}
			if e.server != "miniredis" {
				expiry, err := r.Do(ctx, "PEXPIRETIME", k).Int64()
				if err != nil {
					t.Fatal(err)
				}
				v += " expiring at " + strconv.FormatInt(expiry, 10)
			}
			state[k+" on node "+strconv.Itoa(i)] = v
		}
	}
	return state
}
