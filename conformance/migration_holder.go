package conformance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/core"
)

// Filler keys share the slot of testSlotMigrationHolder's name, so that
// its migration, one key per MIGRATE, takes a while: a second or so with
// fewFillers; several seconds with manyFillers, as a reshard of a busy
// slot does, in a long run only (REDLOCK_LONG=1).
const (
	fewFillers  = 2000
	manyFillers = 50000
)

// testSlotMigrationHolder: a holder with a short TTL extends its lease
// every quarter TTL while its slot migrates key by key, and unlocks it
// once every key moved, before the slot changes hands. First the lock
// key and the holder's other keys (its attempt's mark, the fencing
// counter) are on different masters, which refuse a script over keys of
// both (TRYAGAIN) until the migration ends; then every key moved and the
// old master redirects each call (ASK). Each state is kept for one more
// extension once its keys moved, however fast they moved. A TryLock
// then, whose new keys no master takes until the slot changed hands,
// says the servers are unavailable for now (ErrUnavailable), not that
// they are down. The lock key moves first, then last. The slot goes back
// to its master afterwards.
func testSlotMigrationHolder(t *testing.T, e env, fillers int) {
	// A node timeout a loaded machine does not reach: a call while the
	// slot migrates takes a few round trips.
	ttl, timeout := 2*time.Second, 500*time.Millisecond
	for _, lockFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("LockKeyFirst=%v", lockFirst), func(t *testing.T) {
			ctx, n := ctxFor(t, 2*time.Minute), name(t)
			cc := e.admin(t, 0).(*redis.ClusterClient)
			filler := fill(t, ctx, cc, n, fillers) // first: it takes a while
			l := mustLock(t, ctx, e.client(t, core.WithTTL(ttl), core.WithNodeTimeout(timeout)).Mutex(n).TryLock)
			slot, from, to := slotOf(t, ctx, cc, lockKey(n))
			others, err := from.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
			if err != nil {
				t.Fatal(err)
			}
			others = slices.DeleteFunc(others, func(k string) bool {
				return k == lockKey(n) || strings.HasPrefix(k, lockKey(n)+":filler:")
			})
			first, split, moved := []string{lockKey(n)}, filler[:fillers/2], slices.Concat(others, filler[fillers/2:])
			if !lockFirst {
				first, moved = others, slices.Concat([]string{lockKey(n)}, filler[fillers/2:])
			}
			var moving sync.WaitGroup
			migrate(t, ctx, slot, from, to, first...)
			defer func() {
				moving.Wait()
				if err := finishMigration(context.WithoutCancel(ctx), cc, slot, from, to); err != nil {
					t.Fatalf("finishing the migration of slot %d: %v", slot, err)
				}
				migrate(t, ctx, slot, to, from) // back, in batches: quickly
				if err := finishMigration(ctx, cc, slot, to, from); err != nil {
					t.Errorf("moving slot %d back: %v", slot, err)
				}
			}()
			tick := time.NewTicker(ttl / 4)
			defer tick.Stop()
			extend := func(when string) {
				t.Helper()
				if err := l.Extend(ctx, ttl); err != nil {
					t.Fatalf("Extend %s: %v", when, err)
				}
			}
			// move moves keys one by one while the holder extends its lease,
			// then extends it once more in the state they leave.
			move := func(state string, keys []string) {
				t.Helper()
				done := make(chan error, 1)
				moving.Add(1)
				go func() {
					defer moving.Done()
					var err error
					for _, k := range keys {
						if err = moveKeys(ctx, from, to, k); err != nil {
							break
						}
					}
					done <- err
				}()
				for {
					select {
					case err := <-done:
						if err != nil {
							t.Fatalf("moving the keys of slot %d: %v", slot, err)
						}
						<-tick.C
						extend(state)
						return
					case <-tick.C:
						extend("while the keys moved, " + state)
					}
				}
			}
			move("with the lock key and the holder's other keys on different masters", split)
			move("with every key moved", moved)
			if err := l.Unlock(ctx); err != nil {
				t.Errorf("Unlock while its slot migrated: %v", err)
			}
			if cc.Exists(ctx, lockKey(n)).Val() != 0 {
				t.Errorf("the lock is still held after its Unlock while its slot migrated")
			}
			if l, err := e.client(t).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrUnavailable) {
				t.Errorf("TryLock while the slot migrated: got (%v, %v), want ErrUnavailable", l, err)
			}
		})
	}
}

// fill writes count keys in name's slot, which expire after a minute.
func fill(t *testing.T, ctx context.Context, cc *redis.ClusterClient, name string, count int) []string {
	t.Helper()
	keys := make([]string, count)
	_, err := cc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range keys {
			keys[i] = fmt.Sprintf("%s:filler:%d", lockKey(name), i)
			p.Set(ctx, keys[i], "x", time.Minute)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}
