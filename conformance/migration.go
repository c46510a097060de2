package conformance

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/core"
)

// testSlotMigration: the slot of a lock name moves to another master of
// the cluster while the lock is taken, and back. While a slot migrates, a
// script over keys of which some moved already is refused with TRYAGAIN
// (the keys it needs are on two servers): the call must be retried, not
// fail with ErrServerError or ErrNoQuorum. A TryLock whose node timeout
// outlasts the migration holds once it ends; a Lock whose node timeout is
// shorter keeps trying until it ends. Their tokens keep increasing.
func testSlotMigration(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	cc := e.admin(t, 0).(*redis.ClusterClient)
	here, err := cc.MasterForKey(ctx, lockKey(n))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		there *redis.Client
	)
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		if there == nil && m.Options().Addr != here.Options().Addr {
			there = m
		}
		return nil
	})
	if err != nil || there == nil {
		t.Fatalf("the cluster needs a second master for this case: %v", err)
	}
	slot, err := cc.ClusterKeySlot(ctx, lockKey(n)).Result()
	if err != nil {
		t.Fatal(err)
	}
	patient := e.client(t, core.WithNodeTimeout(time.Second))
	l, err := patient.Mutex(n).TryLock(ctx) // draws a token: the fencing counter is a key of the slot
	if err != nil {
		t.Fatal(err)
	}
	last := l.Token()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	during := func(what string, from, to *redis.Client, d time.Duration, take func(context.Context) (*core.Lease, error)) {
		t.Helper()
		done := make(chan error, 1)
		migrate(t, ctx, slot, from, to, lockKey(n)+":fence")
		go func() {
			time.Sleep(d)
			done <- finishMigration(ctx, cc, slot, from, to)
		}()
		l, err := take(ctx)
		if merr := <-done; merr != nil {
			t.Fatalf("finishing the migration of slot %d: %v", slot, merr)
		}
		if err != nil {
			t.Fatalf("%s while slot %d migrated for %v: %v", what, slot, d, err)
		}
		if l.Token() <= last {
			t.Errorf("%s while slot %d migrated: token %d after %d", what, slot, l.Token(), last)
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock after %s: %v", what, err)
		}
	}
	during("TryLock with a 1s node timeout", here, there, 300*time.Millisecond, patient.Mutex(n).TryLock)
	during("Lock with a 150ms node timeout", there, here, 1500*time.Millisecond, func(ctx context.Context) (*core.Lease, error) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return e.client(t).Mutex(n).Lock(wctx)
	})
}

// migrate starts moving slot from one master to another, as redis-cli
// --cluster reshard does, and moves key first: scripts over it and keys
// still on from get TRYAGAIN until finishMigration.
func migrate(t *testing.T, ctx context.Context, slot int64, from, to *redis.Client, key string) {
	t.Helper()
	fromID, toID := from.ClusterMyID(ctx).Val(), to.ClusterMyID(ctx).Val()
	if err := to.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := from.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := moveKeys(ctx, from, to, key); err != nil {
		t.Fatal(err)
	}
}

// finishMigration moves the slot's other keys (other cases' names may
// share it) and gives the slot to its new master.
func finishMigration(ctx context.Context, cc *redis.ClusterClient, slot int64, from, to *redis.Client) error {
	for {
		keys, err := from.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			break
		}
		if err := moveKeys(ctx, from, to, keys...); err != nil {
			return err
		}
	}
	toID := to.ClusterMyID(ctx).Val()
	for _, m := range []*redis.Client{to, from} {
		if err := m.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err(); err != nil {
			return err
		}
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		return m.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err()
	})
}

func moveKeys(ctx context.Context, from, to *redis.Client, keys ...string) error {
	host, port, err := net.SplitHostPort(to.Options().Addr)
	if err != nil {
		return err
	}
	args := []any{"MIGRATE", host, port, "", 0, 5000, "REPLACE", "KEYS"}
	for _, k := range keys {
		args = append(args, k)
	}
	err = from.Do(ctx, args...).Err()
	if err != nil && err.Error() == "NOKEY" {
		return nil
	}
	return err
}
