package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/conformance/matrix"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
	rueidisdriver "github.com/redlockgo/redlock/drivers/rueidis"
)

// The contention and the migration of BenchmarkSlotMigration.
const (
	migClients     = 8                // Clients contending for the one Mutex
	migHold        = time.Millisecond // each holds it this long
	migLockTimeout = 15 * time.Second // each Lock's context: longer than the migration
	migUnlock      = 5 * time.Second  // each Unlock's context
	migFillers     = 50_000           // keys that share the lock's slot
	migBatch       = 100              // keys per MIGRATE
	migTarget      = 10 * time.Second // the migration is paced to last this long
	migLeadIn      = time.Second      // the contention runs this long before the migration starts
)

// BenchmarkSlotMigration contends for one Mutex (8 Clients, each looping
// Lock with a 15s context, a 1ms hold, Unlock with a 5s context) on a
// Redis Cluster of its own (3 masters with a replica each,
// matrix.StartCluster) while the Mutex's slot, with 50,000 filler keys of
// the same hash tag, moves to another master as redis-cli --cluster
// reshard moves it: SETSLOT IMPORTING and MIGRATING, then CLUSTER
// GETKEYSINSLOT and MIGRATE in batches of 100 keys, paced so that the
// move lasts about 10s, then SETSLOT NODE on every master. The contention
// runs for a second before the migration starts. Then, in the same run,
// the same contention for as long again without a migration: the
// baseline. Per driver (goredis, rueidis) and wait strategy (Poll,
// Notify), it reports:
//
//   - migration-s: how long the move took;
//   - mig-acq-inside: the leases Lock returned while the slot migrated, and
//     base-acq-same-length, the baseline's acquisitions in as long;
//   - mig-p50/p99/max-wait-ms: the waits of the Locks that waited while the
//     slot migrated (mig-locks-spanning of them); base-*-wait-ms: those of
//     every Lock of the baseline;
//   - per phase (mig-, base-; the migration's phase includes its lead-in):
//     the acquisitions, ErrNoQuorum from Lock or Unlock, the releases that
//     failed (their lock is left to expire at its TTL), the Locks whose
//     context ended, and every error. The errors are logged by kind with
//     the first message of each.
//
// It fails on two holders at once or a fencing token that did not
// increase. A Lock counts in the phase it was called in; a phase lets its
// calls end before the next starts. go-redis logs a line for each command
// it does not know (the probe of DELIFEQ, DELEX): filter osscluster.go.
//
//	go test -count=1 -timeout 600s -run '^$' -bench SlotMigration -benchtime 1x ./bench/
func BenchmarkSlotMigration(b *testing.B) {
	for _, d := range []struct {
		name string
		open func(tb testing.TB, seeds []string) core.Driver
	}{{"goredis", openGoredisCluster}, {"rueidis", openRueidisCluster}} {
		for _, w := range []struct {
			name string
			s    core.WaitStrategy
		}{{"Poll", core.Poll}, {"Notify", core.Notify}} {
			b.Run(d.name+"/"+w.name, func(b *testing.B) { benchSlotMigration(b, d.open, w.s) })
		}
	}
}

// openGoredisCluster and openRueidisCluster open a driver over a cluster
// client as the drivers' conformance harnesses do, each node dialled.
func openGoredisCluster(b testing.TB, seeds []string) core.Driver {
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds, ContextTimeoutEnabled: true})
	b.Cleanup(func() { rdb.Close() })
	ctx := context.Background()
	rdb.Exists(ctx, "redlock:warm-up")
	rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() })
	d, err := goredis.New(rdb)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func openRueidisCluster(b testing.TB, seeds []string) core.Driver {
	client, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: seeds, DisableRetry: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(client.Close)
	for _, n := range client.Nodes() {
		n.Do(context.Background(), n.B().Ping().Build())
	}
	d, err := rueidisdriver.New(client)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

func benchSlotMigration(b *testing.B, open func(testing.TB, []string) core.Driver, s core.WaitStrategy) {
	ctx := context.Background()
	lc, err := matrix.StartCluster(ctx, matrix.RedisServer, 3)
	if err != nil {
		b.Skipf("a Redis Cluster of its own: %v", err)
	}
	b.Cleanup(lc.Close)
	seeds := slices.Concat(lc.Masters, lc.Replicas)
	name := "bench-migration"
	lockKey := "redlock:{" + name + "}"
	m := newSlotMove(b, ctx, lc.Masters, lockKey)

	// The fillers first, then the lock's keys: the newest keys of a slot
	// are the first CLUSTER GETKEYSINSLOT lists.
	fill(b, ctx, m.from, name)
	clients := make([]*core.Client, migClients)
	for i := range clients {
		c, err := core.New([]core.Driver{open(b, seeds)}, core.WithWaitStrategy(s))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		clients[i] = c
		l, err := c.Mutex(name).TryLock(ctx) // dials, probes, draws the fence
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	g := &exclusion{}
	held := func() bool { // the lock key exists on a master (the others say MOVED)
		for _, c := range m.masters {
			if c.Exists(ctx, lockKey).Val() == 1 {
				return true
			}
		}
		return false
	}

	b.ResetTimer()
	var moved migrationResult
	mig := runPhase(b, clients, name, g, held, m.where(lockKey), func() {
		time.Sleep(migLeadIn) // the contention settles into its steady state first
		moved = m.run(b, ctx, lockKey)
	})
	base := runPhase(b, clients, name, g, held, m.where(lockKey), func() { time.Sleep(mig.length) })
	b.StopTimer()

	if g.violations > 0 {
		b.Errorf("mutual exclusion violated %d times: %s", g.violations, g.first)
	}
	b.Logf("migration: slot %d, %s -> %s, %d keys in %d MIGRATE batches over %v; the lock's fence moved in batch %d, its lock key in batch %d",
		m.slot, m.from.Options().Addr, m.to.Options().Addr, moved.keys, moved.batches, moved.took.Round(time.Millisecond), moved.fenceBatch, moved.lockBatch)
	for _, p := range []struct {
		name string
		st   *phaseStats
	}{{"migration", mig}, {"baseline", base}} {
		b.Logf("%s (%v): %d acquisitions (%.0f/s); wait p50 %.2fms p99 %.2fms max %.2fms; Lock errors %v; Unlock errors %v; lock key held after the phase: %v",
			p.name, p.st.length.Round(time.Millisecond), len(p.st.waits), float64(len(p.st.waits))/p.st.length.Seconds(),
			ms(percentile(p.st.waits, 50)), ms(percentile(p.st.waits, 99)), ms(percentile(p.st.waits, 100)),
			p.st.lockErrs, p.st.unlockErrs, p.st.leftHeld)
		for _, e := range p.st.examples() {
			b.Logf("%s: %s", p.name, e)
		}
	}
	// The figures of the migration are those of the Locks that waited
	// while the slot migrated: called before it ended, returned after it
	// began; those of the baseline are all its Locks.
	inside, spanned := 0, []time.Duration(nil)
	for i, got := range mig.got {
		if got.After(moved.began) && got.Before(moved.ended) {
			inside++
		}
		if got.After(moved.began) && got.Add(-mig.waits[i]).Before(moved.ended) {
			spanned = append(spanned, mig.waits[i])
		}
	}
	baseSame := float64(len(base.waits)) * moved.took.Seconds() / base.length.Seconds()
	b.Logf("migration: %d of the phase's %d acquisitions returned while the slot migrated (the baseline made %.0f in as long); %d Locks waited during it: wait p50 %.2fms p99 %.2fms max %.2fms",
		inside, len(mig.waits), baseSame, len(spanned), ms(percentile(spanned, 50)), ms(percentile(spanned, 99)), ms(percentile(spanned, 100)))
	b.ReportMetric(moved.took.Seconds(), "migration-s")
	b.ReportMetric(float64(inside), "mig-acq-inside")
	b.ReportMetric(baseSame, "base-acq-same-length")
	b.ReportMetric(float64(len(spanned)), "mig-locks-spanning")
	b.ReportMetric(ms(percentile(spanned, 50)), "mig-p50-wait-ms")
	b.ReportMetric(ms(percentile(spanned, 99)), "mig-p99-wait-ms")
	b.ReportMetric(ms(percentile(spanned, 100)), "mig-max-wait-ms")
	b.ReportMetric(ms(percentile(base.waits, 50)), "base-p50-wait-ms")
	b.ReportMetric(ms(percentile(base.waits, 99)), "base-p99-wait-ms")
	b.ReportMetric(ms(percentile(base.waits, 100)), "base-max-wait-ms")
	for _, p := range []struct {
		prefix string
		st     *phaseStats
	}{{"mig-", mig}, {"base-", base}} {
		st := p.st
		b.ReportMetric(float64(len(st.waits)), p.prefix+"phase-acquisitions")
		b.ReportMetric(float64(st.lockErrs["ErrNoQuorum"]+st.unlockErrs["ErrNoQuorum"]), p.prefix+"noquorum")
		b.ReportMetric(float64(st.failedReleases), p.prefix+"failed-releases")
		b.ReportMetric(float64(st.lockErrs["timeout"]), p.prefix+"lock-timeouts")
		errs := 0
		for _, n := range st.lockErrs {
			errs += n
		}
		b.ReportMetric(float64(errs+st.failedReleases), p.prefix+"errors") // of Lock and Unlock, of every kind
	}
}

// exclusion checks that one holder at a time holds the Mutex, and that
// each draws a larger fencing token than the one before.
type exclusion struct {
	mu         sync.Mutex
	holding    bool
	last       uint64
	violations int
	first      string
}

func (g *exclusion) enter(token uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.holding:
		g.violate(fmt.Sprintf("token %d granted while another lease held the lock", token))
	case token <= g.last:
		g.violate(fmt.Sprintf("token %d after %d", token, g.last))
	}
	g.holding, g.last = true, max(g.last, token)
}

func (g *exclusion) leave() {
	g.mu.Lock()
	g.holding = false
	g.mu.Unlock()
}

func (g *exclusion) violate(what string) {
	if g.violations == 0 {
		g.first = what
	}
	g.violations++
}

// phaseStats are the outcomes of the calls made during one phase.
type phaseStats struct {
	length         time.Duration
	mu             sync.Mutex
	waits          []time.Duration
	got            []time.Time // when each Lock returned its lease
	lockErrs       map[string]int
	unlockErrs     map[string]int
	failedReleases int
	example        map[string]string // the first error of each kind
	leftHeld       bool
}

func (st *phaseStats) fail(call string, err error) {
	kind := "other"
	switch {
	case errors.Is(err, core.ErrNoQuorum):
		kind = "ErrNoQuorum"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	case errors.Is(err, core.ErrLost):
		kind = "ErrLost"
	case errors.Is(err, core.ErrNotHeld):
		kind = "ErrNotHeld"
	case errors.Is(err, core.ErrServerError):
		kind = "ErrServerError"
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	errs := st.lockErrs
	if call == "Unlock" {
		errs = st.unlockErrs
		st.failedReleases++
	}
	errs[kind]++
	if _, ok := st.example[call+"/"+kind]; !ok {
		st.example[call+"/"+kind] = err.Error()
	}
}

func (st *phaseStats) examples() []string {
	var out []string
	for k, v := range st.example {
		out = append(out, k+": "+v)
	}
	sort.Strings(out)
	return out
}

// runPhase has each Client loop Lock, hold, Unlock until during returns,
// then lets each finish its last call.
func runPhase(b *testing.B, clients []*core.Client, name string, g *exclusion, held func() bool, where func() string, during func()) *phaseStats {
	ctx := context.Background()
	st := &phaseStats{lockErrs: map[string]int{}, unlockErrs: map[string]int{}, example: map[string]string{}}
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for _, c := range clients {
		mu := c.Mutex(name)
		wg.Go(func() {
			for !stop.Load() {
				lctx, cancel := context.WithTimeout(ctx, migLockTimeout)
				asked := time.Now()
				l, err := mu.Lock(lctx)
				cancel()
				if err != nil {
					st.fail("Lock", err)
					continue
				}
				waited := time.Since(asked)
				st.mu.Lock()
				st.waits = append(st.waits, waited)
				st.got = append(st.got, asked.Add(waited))
				st.mu.Unlock()
				g.enter(l.Token())
				time.Sleep(migHold)
				g.leave()
				uctx, cancel := context.WithTimeout(ctx, migUnlock)
				if err := l.Unlock(uctx); err != nil {
					st.fail("Unlock", err)
					if where != nil {
						b.Logf("after the failed Unlock: %s", where())
					}
				}
				cancel()
			}
		})
	}
	during()
	st.length = time.Since(start)
	stop.Store(true)
	wg.Wait()
	if len(st.waits) == 0 {
		b.Logf("no acquisition in a phase of %v", st.length)
	}
	// Every lease was released or failed to be: a key left is one that
	// waits for its TTL.
	st.leftHeld = held()
	return st
}

// slotMove is the move of one slot from one master to another.
type slotMove struct {
	slot     int64
	from, to *redis.Client
	masters  []*redis.Client
}

type migrationResult struct {
	took                  time.Duration
	began, ended          time.Time // SETSLOT MIGRATING, and SETSLOT NODE on every master
	keys, batches         int
	fenceBatch, lockBatch int // the batch that moved the key, from 1; 0 if none did
}

// newSlotMove finds key's slot and its master (from), and picks another
// master (to).
func newSlotMove(b testing.TB, ctx context.Context, masters []string, key string) *slotMove {
	m := &slotMove{}
	for _, a := range masters {
		c := redis.NewClient(&redis.Options{Addr: a, Protocol: 2, DisableIdentity: true})
		b.Cleanup(func() { c.Close() })
		m.masters = append(m.masters, c)
	}
	slot, err := m.masters[0].ClusterKeySlot(ctx, key).Result()
	if err != nil {
		b.Fatal(err)
	}
	m.slot = slot
	//lint:ignore SA1019 the slot map, for the address of the slot's master
	slots, err := m.masters[0].ClusterSlots(ctx).Result()
	if err != nil {
		b.Fatal(err)
	}
	owner := ""
	for _, r := range slots {
		if int64(r.Start) <= slot && slot <= int64(r.End) {
			owner = r.Nodes[0].Addr
		}
	}
	for _, c := range m.masters {
		switch {
		case c.Options().Addr == owner:
			m.from = c
		case m.to == nil:
			m.to = c
		}
	}
	if m.from == nil || m.to == nil {
		b.Fatalf("slot %d: no master serves it (%q) or no other master", slot, owner)
	}
	return m
}

// where returns a diagnosis: which of the lock's keys each of the two
// masters has.
func (m *slotMove) where(lockKey string) func() string {
	return func() string {
		ctx := context.Background()
		var out []string
		for _, suffix := range []string{"", ":fence", ":q"} {
			k := lockKey + suffix
			src, _ := m.from.Exists(ctx, k).Result() // ASK when absent
			p := m.to.Pipeline()
			p.Do(ctx, "ASKING")
			dst := p.Exists(ctx, k)
			p.Exec(ctx)
			out = append(out, fmt.Sprintf("%s: from %d, to %d", k, src, dst.Val()))
		}
		return strings.Join(out, "; ")
	}
}

// fill writes migFillers keys of name's hash tag on from.
func fill(b *testing.B, ctx context.Context, from *redis.Client, name string) {
	value := strings.Repeat("x", 64)
	for i := 0; i < migFillers; i += 1000 {
		p := from.Pipeline()
		for j := i; j < min(i+1000, migFillers); j++ {
			p.Set(ctx, "filler:{"+name+"}:"+strconv.Itoa(j), value, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// run moves the slot as redis-cli --cluster reshard does, paced to last
// about migTarget.
func (m *slotMove) run(b testing.TB, ctx context.Context, lockKey string) migrationResult {
	start := time.Now()
	m.begin(b, ctx)
	r := m.finish(b, ctx, lockKey, migTarget)
	r.began = start
	r.took = r.ended.Sub(start)
	return r
}

// begin marks the slot IMPORTING on its new master and MIGRATING on its
// old one.
func (m *slotMove) begin(b testing.TB, ctx context.Context) {
	fromID, toID := m.from.ClusterMyID(ctx).Val(), m.to.ClusterMyID(ctx).Val()
	if err := m.to.Do(ctx, "CLUSTER", "SETSLOT", m.slot, "IMPORTING", fromID).Err(); err != nil {
		b.Fatal(err)
	}
	if err := m.from.Do(ctx, "CLUSTER", "SETSLOT", m.slot, "MIGRATING", toID).Err(); err != nil {
		b.Fatal(err)
	}
}

// finish moves the slot's keys, migBatch at a time, the batches paced so
// that the migFillers keys take about pace, then gives the slot to its
// new master on every master.
func (m *slotMove) finish(b testing.TB, ctx context.Context, lockKey string, pace time.Duration) migrationResult {
	toID := m.to.ClusterMyID(ctx).Val()
	host, port, _ := net.SplitHostPort(m.to.Options().Addr)
	var r migrationResult
	start := time.Now()
	for {
		keys, err := m.from.ClusterGetKeysInSlot(ctx, int(m.slot), migBatch).Result()
		if err != nil {
			b.Fatal(err)
		}
		if len(keys) == 0 {
			break
		}
		r.batches++
		args := []any{"MIGRATE", host, port, "", 0, 5000, "REPLACE", "KEYS"}
		for _, k := range keys {
			args = append(args, k)
			switch {
			case k == lockKey+":fence" && r.fenceBatch == 0:
				r.fenceBatch = r.batches
			case k == lockKey && r.lockBatch == 0:
				r.lockBatch = r.batches
			}
		}
		if err := m.from.Do(ctx, args...).Err(); err != nil && err.Error() != "NOKEY" {
			b.Fatalf("MIGRATE: %v", err)
		}
		r.keys += len(keys)
		due := start.Add(time.Duration(float64(pace) * float64(r.keys) / migFillers))
		time.Sleep(time.Until(due))
	}
	for _, c := range append([]*redis.Client{m.to, m.from}, m.masters...) {
		if err := c.Do(ctx, "CLUSTER", "SETSLOT", m.slot, "NODE", toID).Err(); err != nil {
			b.Fatal(err)
		}
	}
	r.began, r.ended = start, time.Now()
	r.took = r.ended.Sub(start)
	return r
}
