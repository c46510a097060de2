package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/bench/cmd/lockbench/stats"
)

// run is what one library did in one workload of one repetition.
type run struct {
	acquired int             // cycles, or acquisitions (counted or not)
	inWindow int             // acquisitions that returned in the run's duration
	gaveUp   int             // acquisitions the library gave up on (asked again)
	left     int             // acquisitions still waiting when the drain ended
	elapsed  time.Duration   // first ask to the last release
	latency  []time.Duration // of every cycle, or every counted acquisition from its first ask
	handoff  []time.Duration // a release's start to the next holder's return
	shares   []int           // counted acquisitions per Client
	server   serverStats     // the server's CPU and commands in the run
	sent     int64           // commands the Clients sent
	client   time.Duration   // this process's CPU time in the run

	footprint *footprint      // the idle and names workloads
	cells     map[string]*run // the primitives and latency workloads: a run per figure, by cellKey
}

// runKey is a key of its own for every run.
func runKey(lib library) string {
	return "lockbench:" + lib.id + ":" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

// processCPU is the CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measure wraps f, the measured part of a run, in the server's and the
// process's counters.
func measure(ctx context.Context, admins []*redis.Client, sent *atomic.Int64, r *run, f func() error) error {
	sent.Store(0)
	before, err := readStats(ctx, admins)
	if err != nil {
		return err
	}
	cpu := processCPU()
	start := time.Now()
	if err := f(); err != nil {
		return err
	}
	r.elapsed = time.Since(start)
	r.client = processCPU() - cpu
	after, err := readStats(ctx, admins)
	if err != nil {
		return err
	}
	r.server = after.sub(before)
	r.sent = sent.Load()
	return nil
}

// cycle is one Client taking a free key and releasing it, again and
// again, for d.
func cycle(ctx context.Context, lib library, addrs []string, admins []*redis.Client, d time.Duration) (*run, error) {
	var sent atomic.Int64
	l, err := lib.open(addrs, &sent)
	if err != nil {
		return nil, err
	}
	defer l.close()
	key := runKey(lib)
	once := func() error {
		unlock, err := l.lock(ctx, key)
		if err != nil {
			return fmt.Errorf("%s: lock: %w", lib.name, err)
		}
		if err := unlock(ctx); err != nil {
			return fmt.Errorf("%s: unlock: %w", lib.name, err)
		}
		return nil
	}
	for range 20 { // connections made, scripts loaded
		if err := once(); err != nil {
			return nil, err
		}
	}
	r := new(run)
	err = measure(ctx, admins, &sent, r, func() error {
		for end := time.Now().Add(d); time.Now().Before(end); {
			start := time.Now()
			if err := once(); err != nil {
				return err
			}
			r.latency = append(r.latency, time.Since(start))
		}
		return nil
	})
	r.acquired = len(r.latency)
	return r, err
}

// contend has clients Clients take one key, hold it for hold and ask again
// at once. The acquisitions asked for in the first d are counted, each
// from its first ask to its return: one the library gives up on is
// counted as given up and asked again. Meanwhile, and until the last of
// them returned, every Client keeps contending; one still waiting
// drainFor after the first d is counted as left waiting, its wait so far
// as its latency.
func contend(ctx context.Context, lib library, addrs []string, admins []*redis.Client, clients int, hold, d time.Duration) (*run, error) {
	var sent atomic.Int64
	lockers := make([]locker, 0, clients)
	defer func() {
		for _, l := range lockers {
			l.close()
		}
	}()
	key := runKey(lib)
	for range clients {
		l, err := lib.open(addrs, &sent)
		if err != nil {
			return nil, err
		}
		lockers = append(lockers, l)
		unlock, err := l.lock(ctx, key) // connections made, scripts loaded, subscribed
		if err != nil {
			return nil, fmt.Errorf("%s: lock: %w", lib.name, err)
		}
		if err := unlock(ctx); err != nil {
			return nil, fmt.Errorf("%s: unlock: %w", lib.name, err)
		}
	}
	r := &run{shares: make([]int, clients)}
	err := measure(ctx, admins, &sent, r, func() error {
		var (
			releasing atomic.Int64 // UnixNano of the last release's start
			counting  atomic.Int64 // Clients whose asks are still counted
			gaveUp    atomic.Int64
			left      atomic.Int64
			all       atomic.Int64 // every acquisition
			inWindow  atomic.Int64 // acquisitions that returned in the first d
			mu        sync.Mutex
			wg        sync.WaitGroup
			errs      = make([]error, clients) // of releases
		)
		counting.Store(int64(clients))
		start := time.Now()
		stop := start.Add(d)
		outer := ctx
		ctx, cancel := context.WithTimeout(ctx, d+drainFor)
		defer cancel()
		background, stopBackground := context.WithCancel(ctx) // the asks not counted
		defer stopBackground()
		for i, l := range lockers {
			wg.Go(func() {
				counted := true
				for {
					if counted && !time.Now().Before(stop) {
						counted = false
						if counting.Add(-1) == 0 {
							stopBackground()
						}
					}
					if !counted && background.Err() != nil {
						return
					}
					ask := ctx
					if !counted {
						ask = background
					}
					asked := time.Now()
					unlock, err := l.lock(ask, key)
					for err != nil && ask.Err() == nil {
						if counted {
							gaveUp.Add(1)
						}
						unlock, err = l.lock(ask, key)
					}
					if err != nil {
						// Only the end of ask ends the retries: the drain, or
						// for an ask not counted the end of the counted ones.
						if counted && outer.Err() == nil {
							left.Add(1)
							mu.Lock()
							r.latency = append(r.latency, time.Since(asked))
							mu.Unlock()
						}
						return
					}
					got := time.Now()
					all.Add(1)
					if got.Before(stop) {
						inWindow.Add(1)
					}
					at := releasing.Swap(0)
					if counted {
						mu.Lock()
						r.latency = append(r.latency, got.Sub(asked))
						if at != 0 {
							r.handoff = append(r.handoff, got.Sub(time.Unix(0, at)))
						}
						r.shares[i]++
						mu.Unlock()
					}
					holdFor(hold)
					releasing.Store(time.Now().UnixNano())
					release, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
					err = unlock(release)
					cancel()
					if err != nil {
						errs[i] = fmt.Errorf("%s: unlock: %w", lib.name, err)
						return
					}
				}
			})
		}
		wg.Wait()
		r.gaveUp = int(gaveUp.Load())
		r.left = int(left.Load())
		r.acquired = int(all.Load())
		r.inWindow = int(inWindow.Load())
		return errors.Join(errs...)
	})
	return r, err
}

// keySpace is the number of keys of the keys workload.
const keySpace = 1000

// keys has goroutines goroutines share one Client, each taking a key at
// random among keySpace and releasing it at once, again and again, for d.
// A lock the library gives up on is counted and not retried.
func keys(ctx context.Context, lib library, addrs []string, admins []*redis.Client, goroutines int, d time.Duration) (*run, error) {
	var sent atomic.Int64
	l, err := lib.open(addrs, &sent)
	if err != nil {
		return nil, err
	}
	defer l.close()
	prefix := runKey(lib) + ":"
	for i := range 20 { // connections made, scripts loaded
		unlock, err := l.lock(ctx, prefix+strconv.Itoa(i))
		if err != nil {
			return nil, fmt.Errorf("%s: lock: %w", lib.name, err)
		}
		if err := unlock(ctx); err != nil {
			return nil, fmt.Errorf("%s: unlock: %w", lib.name, err)
		}
	}
	r := new(run)
	err = measure(ctx, admins, &sent, r, func() error {
		var (
			mu     sync.Mutex
			wg     sync.WaitGroup
			gaveUp atomic.Int64
			errs   = make([]error, goroutines)
		)
		stop := time.Now().Add(d)
		for g := range goroutines {
			wg.Go(func() {
				var lat []time.Duration
				defer func() {
					mu.Lock()
					r.latency = append(r.latency, lat...)
					mu.Unlock()
				}()
				for time.Now().Before(stop) {
					key := prefix + strconv.Itoa(rand.IntN(keySpace))
					asked := time.Now()
					unlock, err := l.lock(ctx, key)
					if err != nil {
						if ctx.Err() != nil {
							errs[g] = err
							return
						}
						gaveUp.Add(1)
						continue
					}
					lat = append(lat, time.Since(asked))
					if err := unlock(ctx); err != nil {
						errs[g] = fmt.Errorf("%s: unlock: %w", lib.name, err)
						return
					}
				}
			})
		}
		wg.Wait()
		r.gaveUp = int(gaveUp.Load())
		return errors.Join(errs...)
	})
	r.acquired = len(r.latency)
	return r, err
}

// drainFor bounds the time a contention run waits, after its duration,
// for the acquisitions it counts.
const drainFor = 10 * time.Second

// holdFor is a critical section of d. time.Sleep alone ends up to a
// millisecond late, which the lock would be charged with: it sleeps to a
// millisecond before the end and yields until the end.
func holdFor(d time.Duration) {
	if d <= 0 {
		return
	}
	end := time.Now().Add(d)
	if d > time.Millisecond {
		time.Sleep(d - time.Millisecond)
	}
	for time.Now().Before(end) {
		runtime.Gosched()
	}
}

// floors are the same run's idle round trip and idle publish.
type floors struct{ ping, publish time.Duration }

// measureFloors is the median PING after 20ms idle, and the median time
// from the start of a bare PUBLISH after 20ms idle to its receipt by a
// goroutine subscribed through go-redis: the floor of a hand-off by
// message, with no script and no lock.
func measureFloors(ctx context.Context, admin *redis.Client) (floors, error) {
	const idle, samples = 20 * time.Millisecond, 50
	var f floors
	var rtts, delays []time.Duration
	for range samples {
		holdFor(idle)
		start := time.Now()
		if err := admin.Ping(ctx).Err(); err != nil {
			return f, err
		}
		rtts = append(rtts, time.Since(start))
	}
	sub := redis.NewClient(admin.Options())
	defer sub.Close()
	channel := "lockbench:floor:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ps := sub.Subscribe(ctx, channel)
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		return f, err
	}
	msgs := ps.Channel()
	for range samples {
		holdFor(idle)
		start := time.Now()
		if err := admin.Publish(ctx, channel, "x").Err(); err != nil {
			return f, err
		}
		<-msgs
		delays = append(delays, time.Since(start))
	}
	return floors{stats.Percentile(rtts, 50), stats.Percentile(delays, 50)}, nil
}
