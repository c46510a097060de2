package conformance

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// runClient runs the cases about what every primitive shares through its
// Client: the keys names make, Close, cancelled contexts, node timeouts.
func runClient(t *testing.T, e env) {
	// The cases on servers of their own (the cell's server, as replicas
	// and clusters) run alongside the others, in the Redis cells: in the
	// Valkey ones too they cost CI minutes for little (ownServers starts
	// Valkey there, for a run by hand).
	own := !e.cluster && len(e.addrs) == 1 && isRedis(e.server)
	ownCluster := e.cluster && isRedis(e.server)
	// Not on Redis 8.0 the cases that kill a master and promote its
	// replica: after the takeover its CLUSTER SHARDS, which rueidis reads
	// from Redis 8 on, lists the shard without slots until the old master
	// is marked failed (cluster-node-timeout, 15s), and until then rueidis
	// has no node for them.
	takeover := e.server != "redis8"
	cases := map[string]func(*testing.T, env){
		"BracesInNames":              testBracesInNames,
		"CloseStopsWaiters":          testCloseStopsWaiters,
		"CancelledContextSendsNone":  testCancelledSendsNone,
		"ShortTTLDefaultNodeTimeout": testShortTTLNodeTimeout,
	}
	if own {
		cases["ReplicaAcks"] = testReplicaAcks
		cases["NewWhileServersDown"] = testNewWhileServersDown
		if e.strategy == core.Notify {
			cases["ConfigBusyNotKept"] = testConfigBusyNotKept
			cases["WakesWithoutEvents"] = testWakesWithoutEvents
		}
	}
	// Every node takes the same keys and channels; miniredis has no ACL.
	if e.h.OpenAs != nil && !e.cluster && len(e.addrs) == 1 && e.server != "miniredis" {
		cases["ConfinedToPrefix"] = testConfinedToPrefix
		if e.strategy == core.Notify {
			cases["ConfigRefused"] = testConfigRefused
		}
	}
	if own && e.strategy == core.Poll { // the wait strategy plays no part
		cases["ReplicaCounts"] = testReplicaCounts
		cases["EvictionReported"] = testEvictionReported
	}
	if ownCluster && takeover {
		cases["Failover"] = testFailover
	}
	if ownCluster && takeover && e.strategy == core.Poll {
		cases["FailoverLosesNoGrant"] = testFailoverLosesNoGrant
	}
	// Valkey too: its cluster flags and lists a failed replica its own way.
	if e.cluster && e.strategy == core.Poll {
		cases["FailedReplicaStopsGrants"] = testFailedReplicaStopsGrants
	}
	// Valkey too: a server lists a replica that joined its own way.
	if e.cluster && takeover && e.strategy == core.Notify {
		cases["LateReplicaNotifies"] = testLateReplicaNotifies
	}
	if ownCluster && e.strategy == core.Notify {
		if os.Getenv("REDLOCK_LONG") == "1" { // a Cluster of its own: seconds to start
			cases["WakesWithoutEvents"] = testWakesWithoutEvents
		}
		cases["NewMasterNotifies"] = testNewMasterNotifies
		cases["HandOffsStayInShard"] = testHandOffsStayInShard
		cases["CloseWhileShardsDropped"] = testCloseWhileShardsDropped
	}
	runCases(t, e, cases)
	if e.cluster && e.strategy == core.Notify {
		t.Run("NotifyConfiguresEveryServer", func(t *testing.T) { testNotifyConfiguresEveryServer(t, e) })
	}
	if !e.cluster && len(e.addrs) == 1 && e.strategy == core.Poll { // one per driver and server
		t.Run("LostReplyNotSentAgain", func(t *testing.T) { testLostReplyNotSentAgain(t, e) })
	}
	if e.cluster { // they move the slots of the cell's cluster
		t.Run("SlotMigration", func(t *testing.T) { testSlotMigration(t, e) })
		t.Run("SlotMigrationMultiLock", func(t *testing.T) { testSlotMigrationMultiLock(t, e) })
		t.Run("BrokenClusterIsDown", func(t *testing.T) { testBrokenClusterIsDown(t, e) })
	}
	if e.cluster && e.strategy == core.Poll { // the strategy plays no part
		t.Run("SlotMigrationLeaseCheck", func(t *testing.T) { testSlotMigrationLeaseCheck(t, e) })
	}
	if e.cluster && e.strategy == core.Notify { // whose Unlock also names the line
		t.Run("SlotMigrationHandOff", func(t *testing.T) { testSlotMigrationHandOff(t, e) })
		t.Run("SlotMigrationHolder", func(t *testing.T) { testSlotMigrationHolder(t, e, fewFillers) })
		if os.Getenv("REDLOCK_LONG") == "1" {
			t.Run("SlotMigrationHolderLong", func(t *testing.T) { testSlotMigrationHolder(t, e, manyFillers) })
		}
	}
}

// cellNodeTimeout is the node timeout of the cells' Clients. The default,
// a tenth of the TTL, is 20-30ms for the short TTLs of some cases: too
// little on a loaded 2-core machine running many cases at once. It still
// times out now and then there, which fails an attempt or a join: a case
// asserting an order or a place in line gives its waiters a Client of
// its own that is patient. Cases that test timeouts set their own.
const cellNodeTimeout = 150 * time.Millisecond

// unhurried is a node timeout that a round trip on a loaded machine does
// not reach: for the Clients of a case whose every round must count (one
// that timed out fails a TryLock, or makes a waiter leave or rejoin).
var unhurried = core.WithNodeTimeout(time.Second)

// cellOptions are the options clientOn gives every cell's Client.
func (e env) cellOptions() []core.Option {
	return append([]core.Option{core.WithNodeTimeout(cellNodeTimeout)}, serverOptions[e.server]...)
}

// firstCalls are the first call of each primitive on name, each giving
// back what it took; opts go to the primitive.
func firstCalls(ctx context.Context, c *core.Client, name string, opts ...core.Option) map[string]func() error {
	lease := func(l *core.Lease, err error) error {
		if l != nil {
			l.Unlock(ctx)
		}
		return err
	}
	return map[string]func() error{
		"Mutex.TryLock":        func() error { return lease(c.Mutex(name, opts...).TryLock(ctx)) },
		"FairMutex.TryLock":    func() error { return lease(c.FairMutex(name, opts...).TryLock(ctx)) },
		"RWMutex.TryRLock":     func() error { return lease(c.RWMutex(name, opts...).TryRLock(ctx)) },
		"Semaphore.TryAcquire": func() error { return lease(c.Semaphore(name, 2, opts...).TryAcquire(ctx, 1)) },
		"MultiLock.TryLock": func() error {
			return lease(c.MultiLock([]string{name, name + "/other"}, opts...).TryLock(ctx))
		},
		"Latch.TrySetCount": func() error {
			l := c.Latch(name, append([]core.Option{core.WithLatchExpiry(time.Second)}, opts...)...)
			_, err := l.TrySetCount(ctx, 1)
			l.CountDown(ctx)
			return err
		},
	}
}

// testBracesInNames: a name or prefix that would change or empty the hash
// tag {name} is refused before anything is sent (on a Cluster it would
// split a primitive's keys over slots, and elsewhere let two names share
// keys), while a name that only holds "{" works, on a Cluster too.
func testBracesInNames(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	spy := &scriptSpy{}
	// Unhurried nodes for the good name's first calls, which open the
	// connections, on a loaded machine.
	c := e.spyClient(t, spy, append(e.cellOptions(), core.WithNodeTimeout(time.Second))...)
	for _, bad := range []struct {
		what, name string
		prefix     string
	}{
		{"a name starting with }", "}" + n, ""},
		{"a name holding }{", n + "}:{orders", ""},
		{"a prefix with an empty hash tag", n, "tenant{}:"},
		{"a prefix with a hash tag", n, "tenant{1}:"},
		{"a prefix holding {", n, "tenant:{"},
	} {
		var opts []core.Option
		if bad.prefix != "" {
			opts = append(opts, core.WithKeyPrefix(bad.prefix))
		}
		for op, call := range firstCalls(ctx, c, bad.name, opts...) {
			if err := call(); !errors.Is(err, core.ErrInvalid) {
				t.Errorf("%s with %s: got %v, want ErrInvalid", op, bad.what, err)
			} else if !strings.Contains(err.Error(), "brace") {
				t.Errorf("%s with %s: the message %q does not say what to change", op, bad.what, err)
			}
		}
	}
	if got := spy.calls.Load(); got != 0 {
		t.Errorf("bad names and prefixes sent %d script calls, want none", got)
	}
	for op, call := range firstCalls(ctx, c, n+"{x") {
		if err := call(); err != nil {
			t.Errorf("%s with a name holding {: %v", op, err)
		}
	}
}

// testCloseStopsWaiters blocks a waiter of each primitive, under Poll in
// its backoff, and closes their Client: each returns ErrClosed at once,
// and no script is sent after Close returned.
func testCloseStopsWaiters(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	// Unhurried nodes: a first attempt that timed out would fail fast
	// with ErrNoQuorum, before Close, on a loaded machine.
	holder := e.client(t, core.WithTTL(time.Minute), unhurried)
	hold := func(l *core.Lease, err error) {
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Unlock(context.Background()) })
	}
	hold(holder.Mutex(n + "/mutex").TryLock(ctx))
	hold(holder.FairMutex(n + "/fair").TryLock(ctx))
	hold(holder.RWMutex(n + "/rw").TryLock(ctx))
	hold(holder.Semaphore(n+"/semaphore", 1).TryAcquire(ctx, 1))
	latch := holder.Latch(n+"/latch", core.WithLatchExpiry(time.Minute))
	if _, err := latch.TrySetCount(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { latch.CountDown(context.Background()) })

	spy := &scriptSpy{}
	// A backoff far longer than the bound below: under Poll the waiters
	// sleep in it when Close comes.
	slow := core.WithBackoff(core.Backoff{Base: 5 * time.Second, Cap: 5 * time.Second, Multiplier: 1})
	c := e.spyClient(t, spy, append(e.cellOptions(), slow, core.WithTTL(20*time.Second), unhurried)...)
	lease := func(lock func(context.Context) (*core.Lease, error)) func() error {
		return func() error {
			l, err := lock(ctx)
			if l != nil {
				l.Unlock(context.Background())
			}
			return err
		}
	}
	waiters := map[string]func() error{
		"Mutex.Lock":     lease(c.Mutex(n + "/mutex").Lock),
		"FairMutex.Lock": lease(c.FairMutex(n + "/fair").Lock),
		"RWMutex.Lock":   lease(c.RWMutex(n + "/rw").Lock),
		"RWMutex.RLock":  lease(c.RWMutex(n + "/rw").RLock),
		"Semaphore.Acquire": lease(func(ctx context.Context) (*core.Lease, error) {
			return c.Semaphore(n+"/semaphore", 1).Acquire(ctx, 1)
		}),
		"MultiLock.Lock": lease(c.MultiLock([]string{n + "/mutex", n + "/other"}).Lock),
		"Latch.Wait":     func() error { return c.Latch(n + "/latch").Wait(ctx) },
	}
	returned := map[string]chan error{}
	for op, wait := range waiters {
		ch := make(chan error, 1)
		returned[op] = ch
		go func() { ch <- wait() }()
	}
	for spy.calls.Load() < int64(len(waiters)) && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // every waiter made its first attempt
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	spy.closed.Store(true)
	bound := time.After(time.Second)
	for op, ch := range returned {
		select {
		case err := <-ch:
			if !errors.Is(err, core.ErrClosed) {
				t.Errorf("%s when its Client closed: got %v, want ErrClosed", op, err)
			}
		case <-bound:
			t.Errorf("%s did not return within a second of Close", op)
		}
	}
	if late := spy.late.Load(); late != 0 {
		t.Errorf("%d script calls were sent after Close returned", late)
	}
}

// testCancelledSendsNone calls every operation with a context cancelled
// before the call: each returns the context's error and sends nothing,
// neither an attempt nor the undo of one.
func testCancelledSendsNone(t *testing.T, e env) {
	n := name(t)
	spy := &scriptSpy{}
	c := e.spyClient(t, spy, e.cellOptions()...)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	lease := func(_ *core.Lease, err error) error { return err }
	latch := c.Latch(n + "/latch")
	for op, call := range map[string]func() error{
		"Mutex.TryLock":           func() error { return lease(c.Mutex(n).TryLock(ctx)) },
		"Mutex.Lock":              func() error { return lease(c.Mutex(n).Lock(ctx)) },
		"Mutex.State":             func() error { _, err := c.Mutex(n).State(ctx); return err },
		"Mutex.ForceUnlock":       func() error { return c.Mutex(n).ForceUnlock(ctx) },
		"Mutex.ForceLock":         func() error { return lease(c.Mutex(n).ForceLock(ctx)) },
		"Mutex.Resume":            func() error { return lease(c.Mutex(n).Resume(ctx, rand.Text())) },
		"FairMutex.TryLock":       func() error { return lease(c.FairMutex(n).TryLock(ctx)) },
		"FairMutex.Lock":          func() error { return lease(c.FairMutex(n).Lock(ctx)) },
		"FairMutex.State":         func() error { _, err := c.FairMutex(n).State(ctx); return err },
		"FairMutex.ForceUnlock":   func() error { return c.FairMutex(n).ForceUnlock(ctx) },
		"RWMutex.TryLock":         func() error { return lease(c.RWMutex(n).TryLock(ctx)) },
		"RWMutex.Lock":            func() error { return lease(c.RWMutex(n).Lock(ctx)) },
		"RWMutex.TryRLock":        func() error { return lease(c.RWMutex(n).TryRLock(ctx)) },
		"RWMutex.RLock":           func() error { return lease(c.RWMutex(n).RLock(ctx)) },
		"RWMutex.State":           func() error { _, err := c.RWMutex(n).State(ctx); return err },
		"RWMutex.ForceUnlock":     func() error { return c.RWMutex(n).ForceUnlock(ctx) },
		"Semaphore.TryAcquire":    func() error { return lease(c.Semaphore(n, 2).TryAcquire(ctx, 1)) },
		"Semaphore.Acquire":       func() error { return lease(c.Semaphore(n, 2).Acquire(ctx, 1)) },
		"Semaphore.SetPermits":    func() error { return c.Semaphore(n, 2).SetPermits(ctx, 3) },
		"Semaphore.TrySetPermits": func() error { _, err := c.Semaphore(n, 2).TrySetPermits(ctx, 3); return err },
		"Semaphore.AddPermits":    func() error { return c.Semaphore(n, 2).AddPermits(ctx, 1) },
		"Semaphore.DrainPermits":  func() error { l, _, err := c.Semaphore(n, 2).DrainPermits(ctx); return lease(l, err) },
		"Semaphore.State":         func() error { _, err := c.Semaphore(n, 2).State(ctx); return err },
		"Semaphore.ForceRelease":  func() error { return c.Semaphore(n, 2).ForceRelease(ctx, rand.Text()) },
		"MultiLock.TryLock":       func() error { return lease(c.MultiLock([]string{n, n + "/other"}).TryLock(ctx)) },
		"MultiLock.Lock":          func() error { return lease(c.MultiLock([]string{n, n + "/other"}).Lock(ctx)) },
		"MultiLock.State":         func() error { _, err := c.MultiLock([]string{n, n + "/other"}).State(ctx); return err },
		"Latch.TrySetCount":       func() error { _, err := latch.TrySetCount(ctx, 1); return err },
		"Latch.CountDown":         func() error { return latch.CountDown(ctx) },
		"Latch.Wait":              func() error { return latch.Wait(ctx) },
		"Latch.Delete":            func() error { return latch.Delete(ctx) },
	} {
		before := spy.calls.Load()
		if err := call(); !errors.Is(err, context.Canceled) || errors.Is(err, core.ErrNoQuorum) {
			t.Errorf("%s with a cancelled context: got %v, want context.Canceled", op, err)
		}
		if sent := spy.calls.Load() - before; sent != 0 {
			t.Errorf("%s with a cancelled context sent %d script calls, want none", op, sent)
		}
	}
}

// testShortTTLNodeTimeout holds every script call back by 10ms, as a
// loaded machine can: the default node timeout of a 100ms lease (a tenth
// of the TTL, 10ms, before it had a floor) must let an uncontended
// TryLock and its Unlock through. Before, no try could pass; a try may
// still miss the floor on a loaded machine, so one of three must pass.
func testShortTTLNodeTimeout(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	spy := &scriptSpy{}
	c := e.spyClient(t, spy)
	// Unhurried first: the connections open, and the first release probes
	// the server's native commands, a call each.
	warm := mustLock(t, ctx, c.Mutex(n, core.WithNodeTimeout(2*time.Second)).TryLock)
	if err := warm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spy.delay.Store(int64(10 * time.Millisecond))
	var errs []error
	for i := range 3 {
		l, err := c.Mutex(fmt.Sprint(n, "/", i), core.WithTTL(100*time.Millisecond)).TryLock(ctx)
		if err == nil {
			if err = l.Unlock(ctx); err == nil {
				return
			}
		}
		errs = append(errs, err)
	}
	t.Errorf("TryLock and Unlock of a free 100ms lease, each call taking 10ms, failed three times: %v", errors.Join(errs...))
}

// testNewWhileServersDown: New sends nothing, so a Client made while its
// server is down (stopped: it accepts no command, and answers nothing)
// returns at once; its calls fail until the server is back, and then work,
// waiting included (under Notify the first wait configures the server),
// and Ping says so.
func testNewWhileServersDown(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	pair := ownServers(t, ctx, e, 0)
	master := pair.Masters[0]
	ds := e.drivers(t, []string{master}) // some clients connect as they are made
	if err := pair.Pause(master); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c, err := core.New(ds, core.WithWaitStrategy(e.strategy), core.WithNodeTimeout(500*time.Millisecond))
	if err != nil {
		t.Fatalf("New while the server is stopped: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Errorf("New while the server is stopped took %v, at least a node timeout: it waited for the server", took.Round(time.Millisecond))
	}
	down, cancel := context.WithTimeout(ctx, time.Second)
	if err := c.Ping(down); err == nil {
		t.Error("Ping while the server is stopped: nil, want an error")
	}
	cancel()
	if err := pair.Resume(master); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping once the server is back: %v", err)
	}
	held := mustLock(t, ctx, c.Mutex(n).Lock)
	got := startLock(ctx, c.Mutex(n).Lock)
	time.Sleep(200 * time.Millisecond) // the waiter waits
	handOff(t, ctx, held, got, 10*time.Second)
}

// testConfigBusyNotKept: a server that answers BUSY (another client's
// script runs past busy-reply-threshold) while the Client configures its
// notifications fails that Ping, but is tried again: once the script
// ended, Ping succeeds and a waiter is handed the lock. Only a refusal
// (testConfigRefused) is kept.
func testConfigBusyNotKept(t *testing.T, e env) {
	ctx, n := ctxFor(t, 30*time.Second), name(t)
	pair := ownServers(t, ctx, e, 0)
	master := pair.Masters[0]
	admin := plain(t, master)
	if err := admin.ConfigSet(ctx, "busy-reply-threshold", "100").Err(); err != nil {
		t.Fatal(err)
	}
	c := e.clientOn(t, []string{master}, core.WithNodeTimeout(time.Second))
	busy := make(chan error, 1)
	go func() {
		busy <- plain(t, master).Eval(ctx, `local s = redis.call('time')
while true do
  local n = redis.call('time')
  if (n[1] - s[1]) * 1000000 + n[2] - s[2] > 1500000 then return 1 end
end`, nil).Err()
	}()
	time.Sleep(300 * time.Millisecond) // the script runs past the threshold
	if err := c.Ping(ctx); err == nil || !strings.Contains(err.Error(), "BUSY") {
		t.Fatalf("Ping while a script keeps the server busy: got %v, want its BUSY", err)
	}
	if err := <-busy; err != nil {
		t.Fatalf("the busy script: %v", err)
	}
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping once the script ended: %v; a BUSY server was taken to refuse for good", err)
	}
	held := mustLock(t, ctx, c.Mutex(n).Lock)
	got := startLock(ctx, c.Mutex(n).Lock)
	time.Sleep(200 * time.Millisecond) // the waiter waits
	handOff(t, ctx, held, got, 10*time.Second)
}
