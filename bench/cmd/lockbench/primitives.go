package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/bench/cmd/lockbench/stats"
	"github.com/redlockgo/redlock/core"
)

// The primitives workload: primClients Clients contend for each primitive,
// each holding it for primHold and asking again at once, on one node and
// on a quorum of three.
const (
	primClients = 4
	primHold    = 50 * time.Millisecond
	primPermits = 3 // of the Semaphore
)

// primitive is one row of the primitives table: how a Client of this
// library takes it. take is nil for the Mutex, which every library takes
// as its lock workloads do, and for the Latch, which is not taken but
// counted down (latchCycles).
type primitive struct {
	name   string
	theirs string // its name in the published figures
	take   func(ctx context.Context, c *core.Client, key string) (*core.Lease, error)
	// published are redlock4j's design's figures, ops/s on a 3-node Redis
	// 7: Redisson, redlock4j single-node, redlock4j 3-node.
	published [3]float64
}

var primitives = []primitive{
	{"Mutex", "lock", nil, [3]float64{18.24, 18.33, 0.81}},
	{"FairMutex", "fair lock", func(ctx context.Context, c *core.Client, key string) (*core.Lease, error) {
		return c.FairMutex(key, core.WithTTL(ttl)).Lock(ctx)
	}, [3]float64{16.99, 12.42, 2.95}},
	{"MultiLock (2 names)", "multi-lock", func(ctx context.Context, c *core.Client, key string) (*core.Lease, error) {
		return c.MultiLock([]string{key + "/a", key + "/b"}, core.WithTTL(ttl)).Lock(ctx)
	}, [3]float64{17.05, 16.97, 17.72}},
	{"RWMutex readers", "RW reader", func(ctx context.Context, c *core.Client, key string) (*core.Lease, error) {
		return c.RWMutex(key, core.WithTTL(ttl)).RLock(ctx)
	}, [3]float64{151.65, 74.66, 95.41}},
	{"RWMutex writers", "RW writer", func(ctx context.Context, c *core.Client, key string) (*core.Lease, error) {
		return c.RWMutex(key, core.WithTTL(ttl)).Lock(ctx)
	}, [3]float64{0.21, 15.63, 16.42}},
	{fmt.Sprintf("Semaphore (%d permits)", primPermits), "semaphore", func(ctx context.Context, c *core.Client, key string) (*core.Lease, error) {
		return c.Semaphore(key, primPermits, core.WithTTL(ttl)).Acquire(ctx, 1)
	}, [3]float64{54.71, 91.09, 87.50}},
	{"Latch", "count-down latch", nil, [3]float64{59.02, 58.19, 59.91}},
}

// ours says whether lib is this library, which has every primitive; a
// peer has the Mutex row only.
func (lib library) ours() bool { return strings.HasPrefix(lib.id, "redlock-") }

// primLocker takes a primitive with a Client of this library.
type primLocker struct {
	redlockLocker
	take func(ctx context.Context, c *core.Client, key string) (*core.Lease, error)
}

func (l primLocker) lock(ctx context.Context, key string) (func(context.Context) error, error) {
	lease, err := l.take(ctx, l.c, key)
	if err != nil {
		return nil, err
	}
	return lease.Unlock, nil
}

// taking is lib with p in place of its Mutex.
func (p primitive) taking(lib library) library {
	open := func(addrs []string, sent *atomic.Int64) (locker, error) {
		l, err := lib.open(addrs, sent)
		if err != nil {
			return nil, err
		}
		return primLocker{l.(redlockLocker), p.take}, nil
	}
	return library{lib.id, lib.name, open, lib.quorum}
}

// cellKey names a figure of a sweep: what, on how many nodes.
func cellKey(what string, nodes int) string { return fmt.Sprintf("%s/%d", what, nodes) }

// primitivesOf runs every primitive lib has on one node and on three
// (when it can lock on several): a run per cell, by cellKey.
func primitivesOf(ctx context.Context, lib library, addrs []string, admins []*redis.Client, d time.Duration) (*run, error) {
	r := &run{cells: make(map[string]*run)}
	for _, nodes := range []int{1, 3} {
		if nodes > 1 && !lib.quorum {
			continue
		}
		for _, p := range primitives {
			var (
				c   *run
				err error
			)
			switch {
			case p.name == "Mutex":
				c, err = contend(ctx, lib, addrs[:nodes], admins[:nodes], primClients, primHold, d)
			case !lib.ours():
				continue
			case p.take == nil:
				c, err = latchCycles(ctx, lib, addrs[:nodes], admins[:nodes], primClients, primHold, d)
			default:
				c, err = contend(ctx, p.taking(lib), addrs[:nodes], admins[:nodes], primClients, primHold, d)
			}
			if err != nil {
				return nil, fmt.Errorf("%s on %d nodes: %w", p.name, nodes, err)
			}
			r.cells[cellKey(p.name, nodes)] = c
			time.Sleep(200 * time.Millisecond) // the server settles
		}
	}
	return r, nil
}

// latchCycles runs a Latch's cycle again and again for d: the first
// Client sets the count to clients and waits; every Client holds for hold
// and counts down; the cycle ends when the wait returns. Its latency is
// the whole cycle, from the setting.
func latchCycles(ctx context.Context, lib library, addrs []string, admins []*redis.Client, clients int, hold, d time.Duration) (*run, error) {
	var sent atomic.Int64
	var cs []*core.Client
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range clients {
		l, err := lib.open(addrs, &sent)
		if err != nil {
			return nil, err
		}
		cs = append(cs, l.(redlockLocker).c)
	}
	ctx, cancel := context.WithTimeout(ctx, d+drainFor)
	defer cancel()
	key := runKey(lib)
	once := func(hold time.Duration) (time.Duration, error) {
		start := time.Now()
		latch := cs[0].Latch(key)
		ok, err := latch.TrySetCount(ctx, int64(clients))
		if err != nil {
			return 0, fmt.Errorf("%s: TrySetCount: %w", lib.name, err)
		}
		if !ok {
			return 0, fmt.Errorf("%s: TrySetCount: the latch %q is still set", lib.name, key)
		}
		errs := make([]error, clients)
		var wg sync.WaitGroup
		for i, c := range cs {
			wg.Go(func() {
				holdFor(hold)
				errs[i] = c.Latch(key).CountDown(ctx)
			})
		}
		err = latch.Wait(ctx)
		took := time.Since(start)
		wg.Wait()
		return took, errors.Join(append(errs, err)...)
	}
	if _, err := once(0); err != nil { // connections made, scripts loaded, subscribed
		return nil, err
	}
	r := new(run)
	err := measure(ctx, admins, &sent, r, func() error {
		stop := time.Now().Add(d)
		for time.Now().Before(stop) {
			took, err := once(hold)
			if err != nil {
				return err
			}
			r.latency = append(r.latency, took)
			if time.Now().Before(stop) {
				r.inWindow++
			}
		}
		return nil
	})
	r.acquired = len(r.latency)
	return r, err
}

// printPrimitives prints the primitives table, then the published
// figures beside which it is read.
func printPrimitives(w io.Writer, libs []library, runs [][]*run, d time.Duration) {
	fmt.Fprintf(w, "### Primitives: %d Clients, %v hold, one node and three\n\n", primClients, primHold)
	fmt.Fprintln(w, "| primitive | library | one node: ops/s | acquire p50 | acquire p99 | three nodes: ops/s | acquire p50 | acquire p99 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	var peers []string
	for _, lib := range libs {
		if !lib.ours() {
			peers = append(peers, lib.name)
		}
	}
	for _, p := range primitives {
		for i, lib := range libs {
			if p.name != "Mutex" && !lib.ours() {
				continue
			}
			fmt.Fprintf(w, "| %s | %s |", p.name, lib.name)
			for _, nodes := range []int{1, 3} {
				printCell(w, runs[i], cellKey(p.name, nodes), d)
			}
			fmt.Fprintln(w)
		}
		if p.name != "Mutex" && len(peers) > 0 {
			fmt.Fprintf(w, "| %s | %s: no such primitive | — | — | — | — | — | — |\n", p.name, strings.Join(peers, ", "))
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Beside it, redlock4j's design's published figures (theirs, not measured here; ops/s, on a 3-node Redis 7):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| primitive | Redisson | redlock4j single-node | redlock4j 3-node |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, p := range primitives {
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.2f |\n", p.theirs, p.published[0], p.published[1], p.published[2])
	}
	fmt.Fprintln(w)
}

// printCell prints a cell's ops/s, acquire p50 and p99 over the
// repetitions, or dashes where the library did not run it.
func printCell(w io.Writer, reps []*run, key string, d time.Duration) {
	var ops, p50, p99 []float64
	for _, r := range reps {
		if c := r.cells[key]; c != nil {
			ops = append(ops, float64(c.inWindow)/d.Seconds())
			p50 = append(p50, us(stats.Percentile(c.latency, 50)))
			p99 = append(p99, us(stats.Percentile(c.latency, 99)))
		}
	}
	fmt.Fprintf(w, " %s | %s | %s |", spread(ops, num(1)), spread(p50, fmtUs), spread(p99, fmtUs))
}

// opsPerPrimitive is the median ops/s of each library in each primitive
// on nodes nodes, NaN where it did not run.
func opsPerPrimitive(runs []*run, nodes int, d time.Duration) []float64 {
	var vs []float64
	for _, p := range primitives {
		var xs []float64
		for _, r := range runs {
			if c := r.cells[cellKey(p.name, nodes)]; c != nil {
				xs = append(xs, float64(c.inWindow)/d.Seconds())
			}
		}
		if len(xs) == 0 {
			vs = append(vs, 0)
		} else {
			vs = append(vs, stats.Of(xs).Med)
		}
	}
	return vs
}
