package bench_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// backlogSize is how many dead entries BenchmarkBacklog leaves in a key.
const backlogSize = 100_000

// backlog is one kind of dead state a primitive's scripts must get through
// in bounded time: seed writes it under the name, and op is the call made
// again and again until the key named by drained is empty (once, when
// drained is empty: nothing purges waiting readers).
type backlog struct {
	name    string
	seed    func(b *testing.B, ctx context.Context, r *redis.Client, n string)
	drained func(n string) string
	op      func(ctx context.Context, c *core.Client, n string) error
}

// BenchmarkBacklog reports the longest single script call, from the
// server's SLOWLOG, while a primitive's calls work through a backlog of
// 100,000 dead entries (tickets whose keys are gone, lapsed lines,
// expired permits, readers, a run of live permits), and while the largest
// Semaphore lease and the largest MultiLock are taken, extended and
// released: Redis runs one script at a time, so that is how long every
// other client of the server may wait behind it. max-call-µs is the
// least of three drains' longest calls (see benchBacklog);
// paused-max-call-µs the longest of all, pauses of the server's process
// included. Each drain runs again with every third reply lost
// (LostReplies). It runs on a Redis 7 node and on a Valkey 9 node, where
// a release is native (DELIFEQ).
//
//	go test -run '^$' -bench Backlog -benchtime 1x ./bench/
func BenchmarkBacklog(b *testing.B) {
	key := func(n, suffix string) string { return "redlock:{" + n + "}" + suffix }
	takeAndRelease := func(take func(context.Context) (*core.Lease, error), ctx context.Context) error {
		l, err := take(ctx)
		if err != nil {
			return err
		}
		return l.Unlock(ctx)
	}
	for _, bl := range []backlog{{
		name: "Mutex/DeadTickets",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			zadd(b, ctx, r, key(n, ":q"), func(i int) (float64, string) {
				return float64(i), key(n, ":t:zz:"+strconv.Itoa(i))
			})
		},
		drained: func(n string) string { return key(n, ":q") },
		op: func(ctx context.Context, c *core.Client, n string) error {
			return takeAndRelease(c.Mutex(n, core.WithOwner("a")).TryLock, ctx)
		},
	}, {
		name: "FairMutex/LapsedLine",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			zadd(b, ctx, r, key(n, ":fair:q"), func(i int) (float64, string) { return float64(i), "lapsed" + strconv.Itoa(i) })
			zadd(b, ctx, r, key(n, ":fair:lapse"), func(i int) (float64, string) { return 1, "lapsed" + strconv.Itoa(i) })
		},
		drained: func(n string) string { return key(n, ":fair:lapse") },
		op: func(ctx context.Context, c *core.Client, n string) error {
			return takeAndRelease(c.FairMutex(n).TryLock, ctx)
		},
	}, {
		name: "RWMutex/LapsedReaders",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			zadd(b, ctx, r, key(n, ":rw:r"), func(i int) (float64, string) { return 1, "lapsed" + strconv.Itoa(i) })
		},
		drained: func(n string) string { return key(n, ":rw:r") },
		op: func(ctx context.Context, c *core.Client, n string) error {
			return takeAndRelease(c.RWMutex(n).TryLock, ctx)
		},
	}, {
		name: "RWMutex/WaitingReaders",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			far := float64(time.Now().Add(time.Hour).UnixMilli())
			zadd(b, ctx, r, key(n, ":rw:rq"), func(i int) (float64, string) { return far, "zz:" + strconv.Itoa(i) })
		},
		op: func(ctx context.Context, c *core.Client, n string) error {
			return takeAndRelease(c.RWMutex(n).TryLock, ctx)
		},
	}, {
		name: "Semaphore/DeadTickets",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			zadd(b, ctx, r, key(n, ":semaphore:q"), func(i int) (float64, string) {
				return float64(i), key(n, ":semaphore:t:zz:"+strconv.Itoa(i))
			})
		},
		drained: func(n string) string { return key(n, ":semaphore:q") },
		op: func(ctx context.Context, c *core.Client, n string) error {
			s := c.Semaphore(n, 2)
			return takeAndRelease(func(ctx context.Context) (*core.Lease, error) { return s.TryAcquire(ctx, 1) }, ctx)
		},
	}, {
		name: "Semaphore/ExpiredPermits",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			zadd(b, ctx, r, key(n, ":semaphore"), func(i int) (float64, string) { return 1, strconv.Itoa(i + 1) })
		},
		drained: func(n string) string { return key(n, ":semaphore") },
		op: func(ctx context.Context, c *core.Client, n string) error {
			s := c.Semaphore(n, backlogSize+10)
			return takeAndRelease(func(ctx context.Context) (*core.Lease, error) { return s.TryAcquire(ctx, 3) }, ctx)
		},
	}, {
		// The largest lease: MaxSemaphoreAcquire permits taken, extended
		// and given back, past 100,000 expired ones.
		name: "Semaphore/LargestLease",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			zadd(b, ctx, r, key(n, ":semaphore"), func(i int) (float64, string) { return 1, strconv.Itoa(i + 1) })
		},
		drained: func(n string) string { return key(n, ":semaphore") },
		op: func(ctx context.Context, c *core.Client, n string) error {
			l, err := c.Semaphore(n, backlogSize+core.MaxSemaphoreAcquire).TryAcquire(ctx, core.MaxSemaphoreAcquire)
			if err != nil {
				return err
			}
			if err := l.Extend(ctx, time.Minute); err != nil {
				return err
			}
			return l.Unlock(ctx)
		},
	}, {
		// 100,000 live permits in one run: most scans start inside it and
		// look at their bounded number of slots in vain.
		name: "Semaphore/HeldRun",
		seed: func(b *testing.B, ctx context.Context, r *redis.Client, n string) {
			far := float64(time.Now().Add(time.Hour).UnixMilli())
			zadd(b, ctx, r, key(n, ":semaphore"), func(i int) (float64, string) { return far, strconv.Itoa(i + 1) })
		},
		op: func(ctx context.Context, c *core.Client, n string) error {
			s := c.Semaphore(n, backlogSize+core.MaxSemaphoreAcquire)
			for range 10_000 {
				l, err := s.TryAcquire(ctx, core.MaxSemaphoreAcquire)
				if errors.Is(err, core.ErrNotAcquired) {
					continue
				}
				if err != nil {
					return err
				}
				return l.Unlock(ctx)
			}
			return errors.New("no scan found the free permits in 10,000 attempts")
		},
	}, {
		// The largest MultiLock: MaxMultiLockNames names taken, extended
		// and released, each in one script on a single server.
		name: "MultiLock/LargestLock",
		seed: func(*testing.B, context.Context, *redis.Client, string) {},
		op: func(ctx context.Context, c *core.Client, n string) error {
			names := make([]string, core.MaxMultiLockNames)
			for i := range names {
				names[i] = n + "/" + strconv.Itoa(i)
			}
			l, err := c.MultiLock(names).TryLock(ctx)
			if err != nil {
				return err
			}
			if err := l.Extend(ctx, time.Minute); err != nil {
				return err
			}
			return l.Unlock(ctx)
		},
	}} {
		for _, lost := range []bool{false, true} {
			suffix := ""
			if lost && bl.drained == nil {
				continue // one call at a time, with nothing to drain
			} else if lost {
				suffix = "/LostReplies"
			}
			b.Run("Redis7/"+bl.name+suffix, func(b *testing.B) { benchBacklog(b, bl, testenv.Nodes(b)[0], lost) })
			b.Run("Valkey9/"+bl.name+suffix, func(b *testing.B) { benchBacklog(b, bl, testenv.ValkeyNodes(b)[0], lost) })
		}
	}
}

// benchBacklog runs one backlog on node. With lost, every third script
// call's reply is lost (the call runs): the calls that fail, and the
// undos, leaves and retries they bring, work through the backlog too.
func benchBacklog(b *testing.B, bl backlog, node string, lost bool) {
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: node})
	// Closed after logEveryCall's cleanups, which restore the SLOWLOG's
	// settings through it (a deferred Close ran before them: the server
	// went on logging every command).
	b.Cleanup(func() { admin.Close() })
	var c *core.Client
	if lost {
		// Leases whose replies were lost, and are not undone, lapse soon.
		c = benchClientOver(b, []core.Driver{loseEveryThird(benchDriver(b, node))},
			core.WithTTL(3*time.Second), core.WithNodeTimeout(300*time.Millisecond))
	} else {
		c = benchClient(b, []string{node}, core.WithNodeTimeout(2*time.Second))
	}
	logEveryCall(b, ctx, admin)
	// The longest call of one drain may be a call the scheduler or the
	// virtual machine paused, not one that did more work. The same work
	// runs in each of drainsPerBacklog drains, so the least of their
	// longest calls bounds the longest call's work: a pause lengthens one
	// drain's call, not all of them.
	const drainsPerBacklog = 3
	least, longest, calls, failed := time.Duration(0), time.Duration(0), 0, 0
	for i := range b.N * drainsPerBacklog {
		n := "bench-backlog-" + strconv.FormatInt(time.Now().UnixNano(), 36) + strconv.Itoa(i)
		bl.seed(b, ctx, admin, n)
		if err := admin.SlowLogReset(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		failed += drain(b, ctx, bl, c, admin, n, lost)
		drainLongest, drainCalls := longestScript(b, ctx, admin)
		if i == 0 || drainLongest < least {
			least = drainLongest
		}
		longest, calls = max(longest, drainLongest), calls+drainCalls
	}
	drains := float64(b.N * drainsPerBacklog)
	b.ReportMetric(float64(least.Microseconds()), "max-call-µs")
	b.ReportMetric(float64(longest.Microseconds()), "paused-max-call-µs")
	b.ReportMetric(float64(calls)/drains, "scripts/backlog")
	if lost {
		b.ReportMetric(float64(failed)/drains, "failed-ops/backlog")
	}
}

// drain makes bl's call under n until the key bl.drained names is empty
// (once, with nothing to drain), and returns how many calls failed.
func drain(b *testing.B, ctx context.Context, bl backlog, c *core.Client, admin *redis.Client, n string, lost bool) int {
	failed := 0
	deadline := time.Now().Add(time.Minute)
	for round := 0; ; round++ {
		err := bl.op(ctx, c, n)
		if err != nil {
			failed++
		}
		switch {
		case err != nil && !lost:
			b.Fatalf("round %d: %v", round, err)
		case err != nil && time.Now().After(deadline):
			b.Fatalf("round %d, a minute in: %v", round, err)
		case err != nil && bl.drained == nil:
			continue // until it succeeds once
		}
		if bl.drained == nil {
			return failed
		}
		left, err := admin.ZCard(ctx, bl.drained(n)).Result()
		if err != nil {
			b.Fatal(err)
		}
		if left == 0 {
			return failed
		}
	}
}

// zadd writes backlogSize members, member and score from entry(i), in
// batches of 1,000 (one call per batch).
func zadd(b *testing.B, ctx context.Context, r *redis.Client, key string, entry func(int) (float64, string)) {
	for from := 0; from < backlogSize; from += 1000 {
		zs := make([]redis.Z, 0, 1000)
		for i := from; i < min(from+1000, backlogSize); i++ {
			score, member := entry(i)
			zs = append(zs, redis.Z{Score: score, Member: member})
		}
		if err := r.ZAdd(ctx, key, zs...).Err(); err != nil {
			b.Fatal(err)
		}
	}
	if err := r.Expire(ctx, key, 10*time.Minute).Err(); err != nil {
		b.Fatal(err)
	}
}

// logEveryCall has the server's SLOWLOG log every command from now on
// (restored at the benchmark's end).
func logEveryCall(b *testing.B, ctx context.Context, r *redis.Client) {
	was, err := r.ConfigGet(ctx, "slowlog-*").Result()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		for k, v := range was {
			if err := r.ConfigSet(context.Background(), k, v).Err(); err != nil {
				b.Errorf("restoring %s %s: %v", k, v, err)
			}
		}
	})
	for k, v := range map[string]string{"slowlog-log-slower-than": "0", "slowlog-max-len": "100000"} {
		if err := r.ConfigSet(ctx, k, v).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// longestScript returns the longest script call in the SLOWLOG and how
// many there were.
func longestScript(b *testing.B, ctx context.Context, r *redis.Client) (time.Duration, int) {
	entries, err := r.SlowLogGet(ctx, -1).Result()
	if err != nil {
		b.Fatal(err)
	}
	var longest time.Duration
	calls := 0
	for _, e := range entries {
		if len(e.Args) == 0 || !strings.HasPrefix(strings.ToUpper(e.Args[0]), "EVAL") {
			continue
		}
		calls++
		longest = max(longest, e.Duration)
	}
	return longest, calls
}

// loseEveryThird wraps d so that the reply of every third script call is
// lost, after the call ran.
func loseEveryThird(d core.Driver) core.Driver {
	var calls atomic.Int64
	w, _ := faults.Wrap(d, 0, func(faults.Call) faults.Fault {
		if calls.Add(1)%3 == 0 {
			return faults.Fault{Kind: faults.LoseReply}
		}
		return faults.Fault{}
	})
	return w
}
