package conformance

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// testFenceSurvivesLostCounter: with node 2 out of reach, 20 acquisitions
// draw tokens on nodes 0 and 1; node 0 then loses its data (its counter),
// node 2 comes back and node 1 goes. The next acquisition, granted by
// nodes 0 and 2, neither of which counted the 20, must still draw a
// larger token than all of them.
func testFenceSurvivesLostCounter(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	var down [3]atomic.Bool
	c, _ := e.faultyClient(t, func(call faults.Call) faults.Fault {
		if call.Node < len(down) && down[call.Node].Load() {
			return faults.Fault{Kind: faults.Drop}
		}
		return faults.Fault{}
	})
	m := c.Mutex(n)
	down[2].Store(true)
	var last uint64
	for range 20 {
		l, err := m.TryLock(ctx)
		if err != nil {
			t.Fatalf("TryLock with node 2 out of reach: %v", err)
		}
		last = l.Token()
		if err := l.Unlock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.admin(t, 0).Del(ctx, fenceKey(n)).Err(); err != nil {
		t.Fatal(err)
	}
	down[2].Store(false)
	down[1].Store(true)
	l, err := m.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock on nodes 0 (counter lost) and 2 (counted none): %v", err)
	}
	defer l.Unlock(ctx)
	if l.Token() <= last {
		t.Fatalf("token %d after token %d, once node 0 lost its counter and node 2 had missed the acquisitions: fencing went backwards", l.Token(), last)
	}
}

// testIdleNameLeavesNothing uses many names under contention, with every
// primitive, then lets them stay idle for their TTL and WithIdleExpiry:
// no key of them may be left on any node, fencing on or off.
func testIdleNameLeavesNothing(t *testing.T, e env) {
	for _, fencing := range []bool{true, false} {
		t.Run(fmt.Sprintf("Fencing%v", fencing), func(t *testing.T) {
			t.Parallel()
			const ttl, idle = 500 * time.Millisecond, time.Second
			ctx := ctxFor(t, 60*time.Second)
			prefix := "idle-" + rand.Text()[:8] + ":"
			// A node timeout near the TTL: the case is about what is left
			// behind, and many names are slow on a loaded machine.
			opts := []core.Option{core.WithKeyPrefix(prefix), core.WithTTL(ttl), core.WithIdleExpiry(idle), core.WithFencing(fencing),
				core.WithNodeTimeout(400 * time.Millisecond)}
			a, b := e.client(t, opts...), e.client(t, opts...)
			names := e.ops(100) // the slower cells: the same paths, fewer rounds
			var wg sync.WaitGroup
			errs := make(chan error, 4)
			// The two walk the names from either end: they contend where
			// they meet, and on the first and last names.
			for k, c := range []*core.Client{a, b, a, b} {
				wg.Go(func() {
					for j := range names {
						i := j
						if k%2 == 1 {
							i = names - 1 - j
						}
						if k >= 2 && j%100 != 0 {
							continue
						}
						if err := useName(ctx, c, fmt.Sprint(i)); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			deadline := time.Now().Add(ttl + idle + 3*time.Second)
			for i := range e.addrs {
				for {
					keys := e.keysUnder(t, ctx, i, prefix)
					if len(keys) == 0 {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("node %d keeps %d keys of idle names %v after their TTL and idle expiry, e.g. %q", i, len(keys), ttl+idle, keys[0])
					}
					time.Sleep(200 * time.Millisecond)
				}
			}
		})
	}
}

// useName takes and releases each primitive on name i once.
func useName(ctx context.Context, c *core.Client, i string) error {
	take := []func() (*core.Lease, error){
		func() (*core.Lease, error) { return c.Mutex("m" + i).Lock(ctx) },
		func() (*core.Lease, error) { return c.Mutex("m"+i, core.WithOwner("o")).Lock(ctx) },
	}
	if len(i) == 1 { // the other primitives on a few names: each name has the same keys
		take = append(take,
			func() (*core.Lease, error) { return c.FairMutex("f" + i).Lock(ctx) },
			func() (*core.Lease, error) { return c.RWMutex("r" + i).Lock(ctx) },
			func() (*core.Lease, error) { return c.RWMutex("r" + i).RLock(ctx) },
			func() (*core.Lease, error) { return c.Semaphore("s"+i, 1).Acquire(ctx, 1) },
			func() (*core.Lease, error) { return c.MultiLock([]string{"x" + i, "y" + i}).Lock(ctx) },
		)
	}
	for _, f := range take {
		l, err := f()
		if err != nil {
			return err
		}
		if err := l.Unlock(ctx); err != nil {
			return err
		}
	}
	if i == "0" {
		return c.Semaphore("s"+i, 1).SetPermits(ctx, 2)
	}
	return nil
}

// keysUnder lists node i's keys under prefix (on a Cluster, every master's).
func (e env) keysUnder(t *testing.T, ctx context.Context, i int, prefix string) []string {
	t.Helper()
	var (
		mu   sync.Mutex
		keys []string
	)
	scan := func(ctx context.Context, r redis.Cmdable) error {
		it := r.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for it.Next(ctx) {
			mu.Lock()
			keys = append(keys, it.Val())
			mu.Unlock()
		}
		return it.Err()
	}
	var err error
	if cc, ok := e.admin(t, i).(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, e.admin(t, i))
	}
	if err != nil {
		t.Fatalf("SCAN node %d: %v", i, err)
	}
	return keys
}
