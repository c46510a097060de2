package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// slowNodes lets a node take up to 200ms, where a short TTL would give it
// a tenth of the TTL: a test machine running many cases under -race is
// slower than a production network. (The TTLs stay long enough to leave
// validity after such a node.)
var slowNodes = core.WithNodeTimeout(200 * time.Millisecond)

// heldSlots returns how many permit slots node i has, expired or not.
func (e env) heldSlots(t testing.TB, ctx context.Context, i int, name string) int64 {
	t.Helper()
	n, err := e.admin(t, i).ZCard(ctx, semKey(name, "")).Result()
	if err != nil {
		t.Fatalf("ZCARD on node %d: %v", i, err)
	}
	return n
}

// awaitEarliestExpiry waits until node i's clock is past the earliest
// permit expiry of the semaphore called name. A lease's validity ends
// before that, by the request's latency and the drift allowance.
func (e env) awaitEarliestExpiry(t testing.TB, ctx context.Context, i int, name string) {
	t.Helper()
	a := e.admin(t, i)
	first, err := a.ZRangeWithScores(ctx, semKey(name, ""), 0, 0).Result()
	if err != nil || len(first) == 0 {
		t.Fatalf("node %d: no permit to wait for (%v)", i, err)
	}
	for {
		now, err := a.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if float64(now.UnixMilli()) > first[0].Score {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// fakeSlot gives slot of a semaphore to a foreign token on node i, as an
// acquisition would, for an hour.
func (e env) fakeSlot(t testing.TB, ctx context.Context, i int, name, slot, token string) {
	t.Helper()
	a := e.admin(t, i)
	until, err := a.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.ZAdd(ctx, semKey(name, ""), redis.Z{Score: float64(until.Add(time.Hour).UnixMilli()), Member: slot}).Err(); err != nil {
		t.Fatal(err)
	}
	prev, _ := a.HGet(ctx, semKey(name, ":holders"), holdersTokenField+token).Result()
	if prev != "" {
		prev += ","
	}
	if err := a.HSet(ctx, semKey(name, ":holders"), slot, token, holdersTokenField+token, prev+slot).Err(); err != nil {
		t.Fatal(err)
	}
}
