package conformance

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
)

// testCloseWhileShardsDropped: a waiter Client closes while the master
// that holds its sharded channels, a hundred, drops them (their slot
// moves: the server pushes SUNSUBSCRIBE for each). Close must return: a
// Listener that closed its connection while holding what the drop's hook
// waits for never did.
func testCloseWhileShardsDropped(t *testing.T, e env) {
	ctx, base := ctxFor(t, 3*time.Minute), name(t)
	lc := ownServers(t, ctx, e, 2)
	seeds := []string{strings.Join(allNodes(lc), ",")}
	opts := []core.Option{core.WithTTL(30 * time.Second), core.WithNodeTimeout(time.Second)}
	holder := e.clientOn(t, seeds, opts...)
	const k = 100
	slot := int64(driver.Slot(base))
	var names []string
	for i := 0; len(names) < k; i++ {
		if n := fmt.Sprintf("%s/%d", base, i); int64(driver.Slot(n)) == slot {
			names = append(names, n)
		}
	}
	for _, n := range names {
		if _, err := holder.Mutex(n).Lock(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for trial := range 2 {
		here, there := plain(t, lc.Masters[0]), plain(t, lc.Masters[1])
		if here.Exists(ctx, lockKey(names[0])).Val() == 0 {
			here, there = there, here
		}
		waiter, err := core.New(e.drivers(t, seeds), append([]core.Option{core.WithWaitStrategy(core.Notify)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for _, n := range names {
			wg.Add(1)
			go func() { defer wg.Done(); waiter.Mutex(n).Lock(ctx) }()
		}
		if !eventually(20*time.Second, func() bool { return len(here.Do(ctx, "PUBSUB", "SHARDCHANNELS", "*").Val().([]any)) >= k }) {
			t.Fatalf("trial %d: %d sharded channels subscribed on %s", trial, len(here.Do(ctx, "PUBSUB", "SHARDCHANNELS", "*").Val().([]any)), here.Options().Addr)
		}
		migrate(t, ctx, slot, here, there, lockKey(names[0]))
		if err := moveSlotKeys(ctx, slot, here, there); err != nil {
			t.Fatal(err)
		}
		toID := there.ClusterMyID(ctx).Val()
		if err := there.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err(); err != nil {
			t.Fatal(err)
		}
		closed := make(chan struct{})
		go func() { waiter.Close(); close(closed) }()
		time.Sleep(time.Duration(rand.IntN(20000)) * time.Microsecond)
		if err := here.Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err(); err != nil { // here drops the channels: SUNSUBSCRIBE pushes
			t.Fatal(err)
		}
		select {
		case <-closed:
		case <-time.After(15 * time.Second):
			t.Fatalf("trial %d: the waiter Client's Close has not returned 15s after its sharded channels' slot moved", trial)
		}
		wg.Wait()
	}
}
