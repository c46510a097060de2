package conformance

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testHostileSemaphoreSlotsWritesNothing makes a semaphore's key spoiled
// (its permits, or its holders hash) a string, another program's key
// under the name, while a lease holds one of its two permits and its
// line holds a dead waiter: a member whose ticket lapsed in the tickets
// hash. An attempt (TryAcquire) and the lease's release both read that
// key, fail (WRONGTYPE), and must write nothing, as every script that
// fails does: no attempt's mark, the dead waiter still in line and its
// ticket still in the hash, for a later call to drop. The attempt's undo
// is dropped, so that what the nodes hold after is what the attempt left.
func testHostileSemaphoreSlotsWritesNothing(spoiled string) func(*testing.T, env) {
	return func(t *testing.T, e env) {
		ctx, n := ctxFor(t, 20*time.Second), name(t)
		stem, dead := semKey(n, ""), ticketKey(semKey(n, ""), "dead:ticket")
		held, err := e.hostileClient(t, core.WithTTL(time.Minute)).Semaphore(n, 2).TryAcquire(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		// The dead waiter, again before each call: a call that wrote
		// may have dropped it.
		deadWaiter := func() {
			e.everyNode(t, func(r redis.UniversalClient) error {
				now, err := r.Time(ctx).Result()
				if err != nil {
					return err
				}
				lapsed := fmt.Sprintf("%d:1:dead", now.Add(-time.Second).UnixMilli())
				if err := r.HSet(ctx, ticketsKey(stem), dead, lapsed).Err(); err != nil {
					return err
				}
				if err := r.Expire(ctx, ticketsKey(stem), time.Minute).Err(); err != nil {
					return err
				}
				if err := r.ZAdd(ctx, semKey(n, ":q"), redis.Z{Score: 1, Member: dead}).Err(); err != nil {
					return err
				}
				if err := r.Expire(ctx, semKey(n, ":q"), time.Minute).Err(); err != nil {
					return err
				}
				return r.Set(ctx, semKey(n, spoiled), "x", time.Minute).Err()
			})
		}
		deadWaiter()
		c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
			if call.Op != "SemaphoreAcquire" {
				return faults.Fault{Kind: faults.Drop}
			}
			return faults.Fault{}
		}, core.WithNodeTimeout(time.Second))
		before := e.nameContents(t, ctx, n)
		if l, err := c.Semaphore(n, 2).TryAcquire(ctx, 1); !errors.Is(err, core.ErrServerError) {
			if l != nil {
				l.Unlock(ctx)
			}
			t.Fatalf("TryAcquire over %s, a string: got %v, want ErrServerError", semKey(n, spoiled), err)
		}
		if after := e.nameContents(t, ctx, n); !maps.Equal(before, after) {
			t.Errorf("the refused attempt wrote: %s", stateDiff(n, before, after))
		}
		deadWaiter()
		before = e.nameContents(t, ctx, n)
		uctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := held.Unlock(uctx); err == nil {
			t.Fatalf("Unlock over %s, a string: no error", semKey(n, spoiled))
		}
		if after := e.nameContents(t, ctx, n); !maps.Equal(before, after) {
			t.Errorf("the failed release wrote: %s", stateDiff(n, before, after))
		}
	}
}

// nameContents is nameState with what each key holds: a hash's fields, a
// sorted set's members and scores, a string's value.
func (e env) nameContents(t *testing.T, ctx context.Context, n string) map[string]string {
	t.Helper()
	state := e.nameState(t, ctx, n)
	for i := range e.addrs {
		r := e.admin(t, i)
		for _, k := range e.keysUnder(t, ctx, i, lockKey(n)) {
			var held []string
			switch r.Type(ctx, k).Val() {
			case "hash":
				for f, v := range r.HGetAll(ctx, k).Val() {
					held = append(held, f+"="+v)
				}
			case "zset":
				for _, z := range r.ZRangeWithScores(ctx, k, 0, -1).Val() {
					held = append(held, fmt.Sprint(z.Member)+"@"+strconv.FormatFloat(z.Score, 'f', -1, 64))
				}
			}
			sort.Strings(held)
			key := k + " on node " + strconv.Itoa(i)
			state[key] += " holding [" + strings.Join(held, " ") + "]"
		}
	}
	return state
}

// stateDiff says how two nameContents of name n differ, each key named
// by what follows lockKey(n).
func stateDiff(n string, before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "deleted "+k+" ("+v+")")
		} else if w != v {
			d = append(d, k+": "+v+" became "+w)
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "created "+k+" ("+v+")")
		}
	}
	sort.Strings(d)
	return strings.ReplaceAll(strings.Join(d, "; "), lockKey(n), "")
}

// testHostileSemaphoreSizeWritesNothing makes a semaphore's size key a
// hash, another program's key under the name, while its permits hold a
// slot that expired (a lease that died), which a purge would drop.
// Available reads the size, fails (WRONGTYPE), and must write nothing:
// the expired slot and its lease's entries stay for a later call to drop.
func testHostileSemaphoreSizeWritesNothing(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	e.everyNode(t, func(r redis.UniversalClient) error {
		now, err := r.Time(ctx).Result()
		if err != nil {
			return err
		}
		if err := r.ZAdd(ctx, semKey(n, ""), redis.Z{Score: float64(now.Add(-time.Second).UnixMilli()), Member: "1"}).Err(); err != nil {
			return err
		}
		if err := r.HSet(ctx, semKey(n, ":holders"), "1", "DIED", holdersTokenField+"DIED", "1").Err(); err != nil {
			return err
		}
		if err := r.HSet(ctx, semKey(n, ":size"), "x", "1").Err(); err != nil {
			return err
		}
		for _, k := range []string{semKey(n, ""), semKey(n, ":holders"), semKey(n, ":size")} {
			if err := r.Expire(ctx, k, time.Minute).Err(); err != nil {
				return err
			}
		}
		return nil
	})
	before := e.nameContents(t, ctx, n)
	if free, err := e.client(t).Semaphore(n, 2).Available(ctx); !errors.Is(err, core.ErrServerError) {
		t.Fatalf("Available over %s, a hash: got (%d, %v), want ErrServerError", semKey(n, ":size"), free, err)
	}
	if after := e.nameContents(t, ctx, n); !maps.Equal(before, after) {
		t.Errorf("the failed Available wrote: %s", stateDiff(n, before, after))
	}
}
