package conformance

import (
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testHostileReleaseAllWritesNothing makes one key that
// semaphore_release_all.lua reads another program's string (the line,
// or the line's tickets hash), with a waiter's entry in the line, while
// a lease holds a permit. As its reply says (WRONGTYPE, with nothing
// written, when the permits, the holders, the line or the tickets are of
// another type), ReleaseAll must then fail having written nothing: the
// lease's permit, the line's entry and every mark stay, as they do for a
// Release over the same keys (HostileReleaseWritesNothing).
func testHostileReleaseAllWritesNothing(t *testing.T, e env) {
	for _, spoiled := range []struct{ what, key string }{{"line", ":q"}, {"tickets", ":t"}} {
		t.Run(spoiled.what, func(t *testing.T) {
			ctx, n := ctxFor(t, 20*time.Second), name(t)
			stem := semKey(n, "")
			held, err := e.hostileClient(t, core.WithTTL(time.Minute)).Semaphore(n, 2).TryAcquire(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			e.everyNode(t, func(r redis.UniversalClient) error {
				if spoiled.key != ":q" {
					if err := r.ZAdd(ctx, semKey(n, ":q"), redis.Z{Score: 1, Member: ticketKey(stem, "waiter:ticket")}).Err(); err != nil {
						return err
					}
					if err := r.Expire(ctx, semKey(n, ":q"), time.Minute).Err(); err != nil {
						return err
					}
				}
				return r.Set(ctx, semKey(n, spoiled.key), "x", time.Minute).Err()
			})
			before := e.nameContents(t, ctx, n)
			err = e.hostileClient(t, core.WithNodeTimeout(time.Second)).Semaphore(n, 2).ReleaseAll(ctx, held.ID())
			if after := e.nameContents(t, ctx, n); !maps.Equal(before, after) {
				t.Errorf("ReleaseAll over a %s that is a string wrote: %s", spoiled.what, stateDiff(n, before, after))
			}
			if !errors.Is(err, core.ErrServerError) {
				t.Fatalf("ReleaseAll over a %s that is a string: got %v, want ErrServerError (WRONGTYPE, with nothing written)", spoiled.what, err)
			}
		})
	}
}
