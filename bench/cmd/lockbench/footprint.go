package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The sizes of the footprint workloads.
const (
	idleWaiters = 1000 // waiters of the idle workload
	idleKeys    = 100  // keys they wait for
	heldNames   = 2000 // names the names workload holds at once, all within the TTL on a loaded machine
)

// footprint is what one library keeps while it waits or holds, per
// waiter or per name.
type footprint struct {
	waiting    int     // idle: waiters still waiting when it was measured
	goroutines float64 // idle: goroutines beyond the waiters' own
	conns      float64 // idle: server connections
	heap       float64 // idle: bytes of this process's heap
	serverMem  float64 // bytes of server memory (idle: per waiter; names: per held name)
	keys       float64 // names: keys per held name
	leftMem    float64 // names: bytes per name once released
	leftKeys   float64 // names: keys per name once released
}

// footprintTimeout bounds a footprint run: a library that has not held
// every name (or queued every waiter) by then is shown with a dash.
const footprintTimeout = time.Minute

// footprintOf runs the footprint workload w ("idle" or "names"); a library
// that does not finish it within footprintTimeout gets nil, and the
// reason on stderr.
func footprintOf(ctx context.Context, w string, lib library, addrs []string, admins []*redis.Client) (*footprint, error) {
	ctx, cancel := context.WithTimeout(ctx, footprintTimeout)
	defer cancel()
	run := names
	if w == "idle" {
		run = idle
	}
	f, err := run(ctx, lib, addrs, admins)
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(os.Stderr, "lockbench: %s: %s did not finish within %v: %v\n", w, lib.name, footprintTimeout, err)
		time.Sleep(ttl) // what it held expires before the next library's run
		return nil, nil
	}
	return f, err
}

// connections is the servers' connected_clients, summed.
func connections(ctx context.Context, admins []*redis.Client) (int64, error) {
	var n int64
	for _, admin := range admins {
		info, err := admin.Info(ctx, "clients").Result()
		if err != nil {
			return 0, err
		}
		for line := range strings.SplitSeq(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "connected_clients:"); ok {
				c, _ := strconv.ParseInt(v, 10, 64)
				n += c
			}
		}
	}
	return n, nil
}

// keysOf counts the keys on the servers whose names hold part (a run's
// key prefix: every library names its keys after the lock's name), and
// sums their MEMORY USAGE, so that other runs' keys, expiring or not,
// do not count.
func keysOf(ctx context.Context, admins []*redis.Client, part string) (keys, bytes int64, err error) {
	for _, admin := range admins {
		var cursor uint64
		for {
			var batch []string
			batch, cursor, err = admin.Scan(ctx, cursor, "*"+part+"*", 1000).Result()
			if err != nil {
				return 0, 0, err
			}
			cmds, err := admin.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range batch {
					p.MemoryUsage(ctx, k)
				}
				return nil
			})
			if err != nil && err != redis.Nil {
				return 0, 0, err
			}
			for _, c := range cmds {
				if n, err := c.(*redis.IntCmd).Result(); err == nil { // redis.Nil: expired since the SCAN
					keys++
					bytes += n
				}
			}
			if cursor == 0 {
				break
			}
		}
	}
	return keys, bytes, nil
}

// heapInUse is this process's live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// idle has idleWaiters goroutines of one Client wait for idleKeys keys
// that another Client holds, and measures what the waiters cost once they
// settled: goroutines beyond the waiters' own, server connections, this
// process's heap and the servers' memory, per waiter.
func idle(ctx context.Context, lib library, addrs []string, admins []*redis.Client) (*footprint, error) {
	var sent atomic.Int64
	holder, err := lib.open(addrs, &sent)
	if err != nil {
		return nil, err
	}
	defer holder.close()
	waiter, err := lib.open(addrs, &sent)
	if err != nil {
		return nil, err
	}
	defer waiter.close()
	prefix := runKey(lib) + ":"
	var unlocks []func(context.Context) error
	defer func() {
		for _, u := range unlocks {
			u(ctx)
		}
	}()
	for i := range idleKeys {
		u, err := holder.lock(ctx, prefix+strconv.Itoa(i))
		if err != nil {
			return nil, fmt.Errorf("%s: holder's lock: %w", lib.name, err)
		}
		unlocks = append(unlocks, u)
	}
	// The waiter Client's connections and subscriptions exist before the
	// baseline: one lock and unlock of a free key.
	if err := warmUp(ctx, lib, waiter, prefix); err != nil {
		return nil, err
	}
	time.Sleep(100 * time.Millisecond)
	_, mem0, err := keysOf(ctx, admins, prefix)
	if err != nil {
		return nil, err
	}
	conns0, err := connections(ctx, admins)
	if err != nil {
		return nil, err
	}
	heap0, g0 := heapInUse(), runtime.NumGoroutine()

	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var waiting atomic.Int64
	for i := range idleWaiters {
		waiting.Add(1)
		wg.Go(func() {
			defer waiting.Add(-1)
			if u, err := waiter.lock(wctx, prefix+strconv.Itoa(i%idleKeys)); err == nil {
				u(ctx) // a holder died: not expected within the TTL
			}
		})
	}
	time.Sleep(1500 * time.Millisecond) // every waiter asked and settled; bsm/redislock gives up after the TTL
	f := &footprint{waiting: int(waiting.Load())}
	g1, heap1 := runtime.NumGoroutine(), heapInUse()
	_, mem1, err := keysOf(ctx, admins, prefix)
	conns1, err2 := connections(ctx, admins)
	stop()
	wg.Wait()
	if err := cmp.Or(err, err2); err != nil {
		return nil, err
	}
	n := float64(f.waiting)
	f.goroutines = float64(g1-g0-f.waiting) / n
	f.conns = float64(conns1-conns0) / n
	f.heap = float64(heap1-heap0) / n
	f.serverMem = float64(mem1-mem0) / n
	return f, nil
}

// names has one Client hold heldNames names at once, then release them:
// server memory and keys per held name, and what each released name
// leaves behind.
func names(ctx context.Context, lib library, addrs []string, admins []*redis.Client) (*footprint, error) {
	var sent atomic.Int64
	l, err := lib.open(addrs, &sent)
	if err != nil {
		return nil, err
	}
	defer l.close()
	prefix := runKey(lib) + ":"
	if err := warmUp(ctx, lib, l, prefix); err != nil {
		return nil, err
	}
	time.Sleep(100 * time.Millisecond)
	// In parallel, so that every name is taken well within the TTL.
	unlocks := make([]func(context.Context) error, heldNames)
	if err := inParallel(heldNames, func(i int) (err error) {
		if unlocks[i], err = l.lock(ctx, prefix+strconv.Itoa(i)); err != nil {
			return fmt.Errorf("%s: lock: %w", lib.name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	keys1, mem1, err := keysOf(ctx, admins, prefix)
	if err != nil {
		return nil, err
	}
	if err := inParallel(heldNames, func(i int) error {
		if err := unlocks[i](ctx); err != nil {
			return fmt.Errorf("%s: unlock: %w", lib.name, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	keys2, mem2, err := keysOf(ctx, admins, prefix)
	if err != nil {
		return nil, err
	}
	return &footprint{
		serverMem: float64(mem1) / heldNames,
		keys:      float64(keys1) / heldNames,
		leftMem:   float64(mem2) / heldNames,
		leftKeys:  float64(keys2) / heldNames,
	}, nil
}

// inParallel runs f(0) … f(n-1) on 32 goroutines and returns the first
// error.
func inParallel(n int, f func(i int) error) error {
	var (
		wg   sync.WaitGroup
		next atomic.Int64
		errs = make(chan error, 1)
	)
	for range 32 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < n; i = int(next.Add(1)) - 1 {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// warmUp locks and unlocks a free key outside the run's prefix, so that
// l's connections and subscriptions exist before a baseline is read.
func warmUp(ctx context.Context, lib library, l locker, prefix string) error {
	u, err := l.lock(ctx, strings.TrimSuffix(prefix, ":")+"-warm")
	if err != nil {
		return fmt.Errorf("%s: lock: %w", lib.name, err)
	}
	if err := u(ctx); err != nil {
		return fmt.Errorf("%s: unlock: %w", lib.name, err)
	}
	return nil
}
