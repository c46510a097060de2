package conformance

import (
	"context"
	"fmt"
	"maps"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testSlotMigration: the slot of a lock name moves to another master of
// the cluster while the lock is taken, twice. While a slot migrates, a
// script over keys of which some moved already is refused with TRYAGAIN
// (the keys it needs are on two servers): the call must be retried, not
// fail with ErrServerError or ErrNoQuorum. A TryLock whose node timeout
// outlasts the migration holds once it ends; a Lock whose node timeout is
// shorter keeps trying until it ends. Their tokens keep increasing.
func testSlotMigration(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	cc := e.admin(t, 0).(*redis.ClusterClient)
	patient := e.client(t, core.WithNodeTimeout(time.Second))
	l, err := patient.Mutex(n).TryLock(ctx) // draws a token: the fencing counter is a key of the slot
	if err != nil {
		t.Fatal(err)
	}
	last := l.Token()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	during := func(what string, d time.Duration, take func(context.Context) (*core.Lease, error)) {
		t.Helper()
		var l *core.Lease
		e.whileMigrating(t, ctx, cc, fenceKey(n), d, func() { l, err = take(ctx) })
		if err != nil {
			t.Fatalf("%s while its slot migrated for %v: %v", what, d, err)
		}
		if l.Token() <= last {
			t.Errorf("%s while its slot migrated: token %d after %d", what, l.Token(), last)
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil {
			t.Errorf("Unlock after %s: %v", what, err)
		}
	}
	during("TryLock with a 1s node timeout", 300*time.Millisecond, patient.Mutex(n).TryLock)
	// A release is asked again while the slot migrates, within the lease's
	// TTL: one that gave up after its node timeout would leave the lock to
	// expire. (Under Notify it also names the lock's line, which does not
	// exist here: a slot migrating refuses such a script until it moved.)
	// Its node timeout is shorter than the migration, but not so short
	// that a loaded machine cuts a release that ran (its retry then finds
	// nothing, ErrLost).
	hasty := e.client(t, core.WithTTL(20*time.Second), core.WithNodeTimeout(300*time.Millisecond))
	if l, err = hasty.Mutex(n).TryLock(ctx); err != nil {
		t.Fatal(err)
	}
	e.whileMigrating(t, ctx, cc, lockKey(n), time.Second, func() { err = l.Unlock(ctx) })
	if err != nil {
		t.Errorf("Unlock while its slot migrated: %v", err)
	}
	if left := cc.Exists(ctx, lockKey(n)).Val(); left != 0 {
		t.Errorf("the lock is still held after its Unlock while its slot migrated")
	}
	last = l.Token()
	// Lock waits the migration out whatever its attempts meet (TRYAGAIN,
	// or no answer within the node timeout on a loaded machine); the node
	// timeouts only keep its attempts few. rueidis retries TRYAGAIN
	// itself, so its attempts get one that outlasts the migration.
	timeout := time.Second
	if e.h.Driver == "rueidis" {
		timeout = 3 * time.Second
	}
	during(fmt.Sprintf("Lock with a %v node timeout", timeout), 2*time.Second, func(ctx context.Context) (*core.Lease, error) {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return e.client(t, core.WithNodeTimeout(timeout)).Mutex(n).Lock(wctx)
	})
}

// testSlotMigrationMultiLock: an owner's MultiLock takes its names one
// by one on a Cluster (one script per name). The second name's slot
// migrates during TryLock, and the first name's during Unlock: only the
// call that got TRYAGAIN is sent again, not the names before it, so the
// first name draws one fencing token for its one grant, and Unlock,
// which released both names, says so.
func testSlotMigrationMultiLock(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	cc := e.admin(t, 0).(*redis.ClusterClient)
	a, b := n+"/a", n+"/b"
	for i := 0; e.sameSlot(t, ctx, lockKey(a), lockKey(b)); i++ {
		b = fmt.Sprintf("%s/b%d", n, i)
	}
	if a > b {
		a, b = b, a // the MultiLock takes a first
	}
	cl := e.client(t, core.WithNodeTimeout(time.Second), core.WithOwner("migrating-owner"))
	for _, name := range []string{b, a} { // each name draws a token; a's is then the higher
		l := mustLock(t, ctx, cl.Mutex(name).TryLock)
		l.Unlock(ctx)
	}
	fence := func() int64 { v, _ := cc.Get(ctx, fenceKey(a)).Int64(); return v }
	before := fence()
	var l *core.Lease
	e.whileMigrating(t, ctx, cc, fenceKey(b), 300*time.Millisecond, func() {
		var err error
		if l, err = cl.MultiLock([]string{a, b}).TryLock(ctx); err != nil {
			t.Errorf("TryLock while %s's slot migrated: %v", b, err)
		}
	})
	if l == nil {
		t.FailNow()
	}
	if after := fence(); after != before+1 {
		t.Errorf("%s's fencing counter went from %d to %d for one grant", a, before, after)
	}
	var err error
	e.whileMigrating(t, ctx, cc, fenceKey(a), 300*time.Millisecond, func() { err = l.Unlock(ctx) })
	if err != nil {
		t.Errorf("Unlock while %s's slot migrated: %v", a, err)
	}
	for _, name := range []string{a, b} {
		if v := cc.Exists(ctx, lockKey(name)).Val(); v != 0 {
			t.Errorf("%s is still held after Unlock", name)
		}
	}
}

func (e env) sameSlot(t *testing.T, ctx context.Context, k1, k2 string) bool {
	cc := e.admin(t, 0).(*redis.ClusterClient)
	return cc.ClusterKeySlot(ctx, k1).Val() == cc.ClusterKeySlot(ctx, k2).Val()
}

// whileMigrating runs call while key's slot migrates to another master
// (key moving first), for d. call must not end the test: the migration
// must end before the test does.
func (e env) whileMigrating(t *testing.T, ctx context.Context, cc *redis.ClusterClient, key string, d time.Duration, call func()) {
	t.Helper()
	slot, from, to := slotOf(t, ctx, cc, key)
	migrate(t, ctx, slot, from, to, key)
	done := make(chan error, 1)
	go func() {
		time.Sleep(d)
		done <- finishMigration(context.WithoutCancel(ctx), cc, slot, from, to)
	}()
	call()
	if err := <-done; err != nil {
		t.Fatalf("finishing the migration of slot %d: %v", slot, err)
	}
}

// slotOf returns key's slot, the master that holds it, and another. The
// owner is what the masters say, not cc's cached view, which a migration
// earlier in the case may have left stale.
func slotOf(t *testing.T, ctx context.Context, cc *redis.ClusterClient, key string) (slot int64, here, there *redis.Client) {
	t.Helper()
	slot, err := cc.ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var masters []*redis.Client
	err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		masters = append(masters, m)
		return nil
	})
	if err != nil || len(masters) < 2 {
		t.Fatalf("the cluster needs a second master for this case: %v", err)
	}
	shards, err := masters[0].ClusterShards(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	owner := ""
	for _, sh := range shards {
		for _, r := range sh.Slots {
			if r.Start <= slot && slot <= r.End {
				for _, nd := range sh.Nodes {
					if nd.Role == "master" {
						owner = nd.ID
					}
				}
			}
		}
	}
	for _, m := range masters {
		if m.ClusterMyID(ctx).Val() == owner {
			here = m
		} else if there == nil {
			there = m
		}
	}
	if here == nil {
		t.Fatalf("no master of the cluster (%d) serves slot %d at %q", len(masters), slot, owner)
	}
	return slot, here, there
}

// migrate starts moving slot from one master to another, as redis-cli
// --cluster reshard does, and moves keys first: scripts over them and keys
// still on from get TRYAGAIN until finishMigration.
func migrate(t *testing.T, ctx context.Context, slot int64, from, to *redis.Client, keys ...string) {
	t.Helper()
	fromID, toID := from.ClusterMyID(ctx).Val(), to.ClusterMyID(ctx).Val()
	if err := to.Do(ctx, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := from.Do(ctx, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID).Err(); err != nil {
		t.Fatal(err)
	}
	if err := moveKeys(ctx, from, to, keys...); err != nil {
		t.Fatal(err)
	}
}

// finishMigration moves the slot's other keys (other cases' names may
// share it) and gives the slot to its new master.
func finishMigration(ctx context.Context, cc *redis.ClusterClient, slot int64, from, to *redis.Client) error {
	if err := moveSlotKeys(ctx, slot, from, to); err != nil {
		return err
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

// moveSlotKeys moves every key of slot from one master to another.
func moveSlotKeys(ctx context.Context, slot int64, from, to *redis.Client) error {
	for {
		keys, err := from.ClusterGetKeysInSlot(ctx, int(slot), 100).Result()
		if err != nil || len(keys) == 0 {
			return err
		}
		if err := moveKeys(ctx, from, to, keys...); err != nil {
			return err
		}
	}
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
	err = oneMigrateAtATime(func() error { return from.Do(ctx, args...).Err() })
	if err != nil && err.Error() == "NOKEY" {
		return nil
	}
	return err
}

// testSlotMigrationHandOff: a holder releases, with a waiter in line,
// while the slot of the name migrates, the line's tickets moved first and
// the lock and the line not yet. The release's script declares the
// tickets, so the server refuses it whole (TRYAGAIN) rather than running
// it where the lock is and failing on the waiter's ticket halfway, after
// taking the waiter out of line: it wrote nothing. The Client asks again
// for half of the node timeout, as moving a slot's keys usually takes
// less ("brief": the migration ends 100ms in, and the release hands the
// lock on, so the waiter holds at once), and then releases the lock alone
// (see mutexHold.releaseOnly), so that Unlock succeeds and the name is
// free at once: the waiter, still in line with its ticket, takes the name
// at its safety net, the holder's TTL. So also where the server answers
// each release late ("lasting-slow"), and the call asked again is cut by
// its half of the node timeout rather than refused.
func testSlotMigrationHandOff(t *testing.T, e env) {
	for _, c := range []struct {
		name           string
		split, timeout time.Duration
		handedOn       bool
		slow           time.Duration // how late the server answers each release script
	}{
		{"brief", 100 * time.Millisecond, time.Second, true, 0},
		{"lasting", time.Second, 300 * time.Millisecond, false, 0},
		// The release asked again is cut by its own bound, not refused:
		// the lock alone is released all the same, in the time left.
		{"lasting-slow", time.Second, 300 * time.Millisecond, false, 120 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, n := ctxFor(t, 40*time.Second), name(t)
			cc := e.admin(t, 0).(*redis.ClusterClient)
			const ttl = 5 * time.Second
			holder, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
				if c.slow > 0 && call.Op == "ReleaseWake" {
					return faults.Fault{Kind: faults.Slow, After: c.slow}
				}
				return faults.Fault{}
			}, core.WithTTL(ttl), core.WithNodeTimeout(c.timeout))
			l := mustLock(t, ctx, holder.Mutex(n).TryLock)
			got := e.waiter(t, ctx, e.client(t, patient).Mutex(n))
			tickets := ticketsKey(lockKey(n))
			before, err := cc.HGetAll(ctx, tickets).Result()
			if err != nil || len(before) != 1 {
				t.Fatalf("the line's tickets hold %v (%v), want the waiter's", before, err)
			}
			start := time.Now()
			e.whileMigrating(t, ctx, cc, tickets, c.split, func() { err = l.Unlock(ctx) })
			if err != nil {
				t.Fatalf("Unlock while the slot migrated, the tickets moved first: %v", err)
			}
			bound := ttl + 3*time.Second
			if c.handedOn {
				// Handed on, not at the safety net, the holder's TTL:
				// wokenWithin after the migration, with as much again for
				// the retried release on a loaded machine.
				bound = c.split + 2*wokenWithin
			} else {
				if held, err := cc.Exists(ctx, lockKey(n)).Result(); err != nil || held != 0 {
					t.Errorf("after the Unlock the lock key exists (%d, %v), want it released", held, err)
				}
				after, err := cc.HGetAll(ctx, tickets).Result()
				if err != nil || !maps.Equal(after, before) {
					t.Errorf("after the Unlock the tickets hold %v (%v), want %v: a release ran in part", after, err, before)
				}
				if line, err := cc.ZRange(ctx, queueKey(n), 0, -1).Result(); err != nil || len(line) != 1 || before[line[0]] == "" {
					t.Errorf("after the Unlock the line holds %v (%v), want the waiter still in it: a release ran in part", line, err)
				}
			}
			r := <-got
			if r.err != nil {
				t.Fatalf("the waiter's Lock: %v", r.err)
			}
			defer r.l.Unlock(ctx)
			if d := r.at.Sub(start); d > bound {
				t.Fatalf("the waiter held %v after the release began, want within %v", d.Round(time.Millisecond), bound)
			}
		})
	}
}
