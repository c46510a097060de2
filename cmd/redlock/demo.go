package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"

	"github.com/redlockgo/redlock/core"
)

// demoPrefix is the key prefix of the demo's primitives, apart from an
// application's ("redlock:").
const demoPrefix = "redlock-demo:"

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cf connFlags
	cf.register(fs, "prefix") // the demo's keys are its own
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: redlock demo [flags]

Shows each primitive at work, a hand-off with its latency, fencing tokens
rising and a lost lease closing Done, then checks a contended Mutex with
every driver. With no nodes it runs on an embedded miniredis (which has no
keyspace notifications, so waiters poll); give real servers with --nodes
or $REDLOCK_NODES. Its keys start with "redlock-demo:". Exits 1 if a step
failed.

`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "redlock demo: unexpected arguments %q\n\n", fs.Args())
		fs.Usage()
		return 2
	}
	if err := demo(ctx, cf, stdout); err != nil {
		fmt.Fprintln(stderr, "redlock demo:", err)
		return 1
	}
	return 0
}

// demo runs every step on the nodes of cf, or on an embedded miniredis,
// printing a line each. It returns the failures, joined.
func demo(ctx context.Context, cf connFlags, w io.Writer) error {
	urls, err := cf.urls()
	if err != nil {
		return err
	}
	open, err := cf.open()
	if err != nil {
		return err
	}
	strategy, err := cf.waitStrategy()
	if err != nil {
		return err
	}
	if len(urls) == 0 {
		srv, err := miniredis.Run()
		if err != nil {
			return fmt.Errorf("starting miniredis: %w", err)
		}
		defer srv.Close()
		urls = []string{"redis://" + srv.Addr()}
		strategy = core.Poll // miniredis has no keyspace notifications
		fmt.Fprintf(w, "on an embedded miniredis (%s), waiting by %s; give real servers with --nodes or $%s\n\n", srv.Addr(), strategy, nodesEnv)
	} else {
		fmt.Fprintf(w, "on %d node(s) with %s, waiting by %s\n\n", len(urls), cf.driver, strategy)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	d := &demoRun{w: w, open: open, urls: urls, run: randomHex(4)}
	// A node timeout of a second: a loaded machine can hold up the
	// embedded miniredis, which runs in this process, longer than the
	// default (a tenth of the TTL).
	d.opts = []core.Option{core.WithKeyPrefix(demoPrefix), core.WithWaitStrategy(strategy), core.WithTTL(5 * time.Second), core.WithNodeTimeout(time.Second)}
	if strategy == core.Poll {
		// Retry often: a waiter then learns of a release within a few ms.
		d.opts = append(d.opts, core.WithBackoff(core.Backoff{Base: time.Millisecond, Cap: 5 * time.Millisecond, Multiplier: 2}))
	}
	for range 4 { // alice, bob, carol, dave
		c, closeClient, err := connect(open, urls, d.opts...)
		if err != nil {
			return err
		}
		defer closeClient()
		d.clients = append(d.clients, c)
	}
	var errs []error
	for _, step := range []struct {
		name string
		run  func(context.Context) (string, error)
	}{
		{"Mutex", d.mutex},
		{"hand-off", d.handOff},
		{"fencing", d.fencing},
		{"lost lease", d.lostLease},
		{"FairMutex", d.fair},
		{"RWMutex", d.rw},
		{"Semaphore", d.semaphore},
		{"Latch", d.latch},
		{"MultiLock", d.multi},
		{"drivers", d.drivers},
	} {
		line, err := step.run(ctx)
		if err != nil {
			fmt.Fprintf(w, "%-10s FAIL %v\n", step.name, err)
			errs = append(errs, fmt.Errorf("%s: %w", step.name, err))
			continue
		}
		fmt.Fprintf(w, "%-10s %s\n", step.name, line)
	}
	return errors.Join(errs...)
}

// demoRun holds what the steps share: four Clients (alice, bob, carol,
// dave), each with its own connections, as four processes would have.
type demoRun struct {
	w       io.Writer
	open    opener
	urls    []string
	opts    []core.Option
	clients []*core.Client
	run     string // a random suffix of the names, so runs do not meet
}

func (d *demoRun) name(s string) string { return s + "-" + d.run }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tokens prints rising fencing tokens, the first in full and the others
// by the digits that changed: 1839705055861760 → …761 → …762.
func tokens(ts ...uint64) string {
	var b strings.Builder
	for i, t := range ts {
		s := fmt.Sprint(t)
		if i > 0 {
			b.WriteString(" → ")
			if p := fmt.Sprint(ts[0]); len(p) == len(s) && len(s) > 3 && p[:len(s)-3] == s[:len(s)-3] {
				s = "…" + s[len(s)-3:]
			}
		}
		b.WriteString(s)
	}
	return b.String()
}

func ms(t time.Duration) string { return fmt.Sprintf("%.1f ms", float64(t.Microseconds())/1000) }

// mutex: one holds, another's TryLock is refused.
func (d *demoRun) mutex(ctx context.Context) (string, error) {
	name := d.name("mutex")
	la, err := d.clients[0].Mutex(name).TryLock(ctx)
	if err != nil {
		return "", fmt.Errorf("alice's TryLock: %w", err)
	}
	defer la.Unlock(ctx)
	if lb, err := d.clients[1].Mutex(name).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		lb.Unlock(ctx)
		return "", fmt.Errorf("bob's TryLock while alice holds it: got %v, want ErrNotAcquired", err)
	}
	return fmt.Sprintf("alice holds %q (fencing token %d, valid for %s); bob's TryLock is refused: ErrNotAcquired",
		name, la.Token(), time.Until(la.Until()).Round(time.Second)), nil
}

// handOff: bob waits in Lock while alice holds; alice unlocks; how long
// until bob holds.
func (d *demoRun) handOff(ctx context.Context) (string, error) {
	name := d.name("handoff")
	la, err := d.clients[0].Mutex(name).Lock(ctx)
	if err != nil {
		return "", fmt.Errorf("alice's Lock: %w", err)
	}
	got := startLock(ctx, d.clients[1].Mutex(name).Lock)
	time.Sleep(100 * time.Millisecond) // bob is waiting by now
	released := time.Now()
	if err := la.Unlock(ctx); err != nil {
		return "", fmt.Errorf("alice's Unlock: %w", err)
	}
	r := <-got
	if r.err != nil {
		return "", fmt.Errorf("bob's Lock: %w", r.err)
	}
	defer r.l.Unlock(ctx)
	return fmt.Sprintf("bob waits in Lock; alice unlocks; bob holds it %s after the Unlock call began (tokens %s)",
		ms(r.at.Sub(released)), tokens(la.Token(), r.l.Token())), nil
}

// fencing: successive leases, from different clients, draw rising tokens.
func (d *demoRun) fencing(ctx context.Context) (string, error) {
	name := d.name("fencing")
	var drawn []uint64
	var last uint64
	for i := range 5 {
		l, err := d.clients[i%len(d.clients)].Mutex(name).Lock(ctx)
		if err != nil {
			return "", err
		}
		t := l.Token()
		if err := l.Unlock(ctx); err != nil {
			return "", err
		}
		if t <= last {
			return "", fmt.Errorf("token went from %d to %d; it must increase", last, t)
		}
		last = t
		drawn = append(drawn, t)
	}
	return "five leases in turn, from four clients, draw rising tokens: " + tokens(drawn...) +
		" (a store that refuses a token below the highest it saw keeps a late holder out)", nil
}

// lostLease: the key of a lease kept by the watchdog is deleted behind
// its back; its Done closes.
func (d *demoRun) lostLease(ctx context.Context) (string, error) {
	name := d.name("lost")
	c, closeClient, err := connect(d.open, d.urls, append(slices.Clone(d.opts), core.WithTTL(1200*time.Millisecond), core.WithNodeTimeout(300*time.Millisecond), core.WithAutoExtend())...)
	if err != nil {
		return "", err
	}
	defer closeClient()
	l, err := c.Mutex(name).Lock(ctx)
	if err != nil {
		return "", err
	}
	defer l.Unlock(ctx)
	time.Sleep(1300 * time.Millisecond) // past its first TTL: the watchdog extends it
	if err := l.Err(); err != nil {
		return "", fmt.Errorf("the watchdog did not keep the lease: %w", err)
	}
	deleted := time.Now()
	if err := deleteKeys(ctx, d.urls, demoPrefix+"{"+name+"}"); err != nil {
		return "", err
	}
	select {
	case <-l.Done():
	case <-time.After(5 * time.Second):
		return "", errors.New("the lease's Done did not close within 5s of the key's deletion")
	}
	closed := time.Since(deleted)
	if !errors.Is(l.Err(), core.ErrLost) {
		return "", fmt.Errorf("the lease's Done closed, but its Err() is %v, want ErrLost", l.Err())
	}
	return fmt.Sprintf("a 1.2 s lease kept by the watchdog (WithAutoExtend) outlives its TTL; its key is deleted on the servers: Done closes %s later, and Err() is ErrLost",
		ms(closed)), nil
}

// deleteKeys deletes keys on every node, as an operator (or an eviction)
// would behind the holder's back.
func deleteKeys(ctx context.Context, urls []string, keys ...string) error {
	for _, u := range urls {
		conn, err := redis.DialURLContext(ctx, u)
		if err != nil {
			return err
		}
		_, err = redis.DoContext(conn, ctx, "DEL", redis.Args{}.AddFlat(keys)...)
		conn.Close()
		if err != nil {
			return fmt.Errorf("DEL on %s: %w", redact(u), err)
		}
	}
	return nil
}

// fair: three waiters join a FairMutex's line in turn and get it in that
// order.
func (d *demoRun) fair(ctx context.Context) (string, error) {
	name := d.name("fair")
	holder, err := d.clients[0].FairMutex(name).Lock(ctx)
	if err != nil {
		return "", err
	}
	var (
		mu    sync.Mutex
		order []string
		wg    sync.WaitGroup
		errs  = make(chan error, 3)
	)
	names := []string{"bob", "carol", "dave"}
	for i, who := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l, err := d.clients[i+1].FairMutex(name).Lock(ctx)
			if err != nil {
				errs <- fmt.Errorf("%s's Lock: %w", who, err)
				return
			}
			mu.Lock()
			order = append(order, who)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			l.Unlock(ctx)
		}()
		time.Sleep(50 * time.Millisecond) // the next one comes later
	}
	if err := holder.Unlock(ctx); err != nil {
		return "", err
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return "", err
	}
	if !slices.Equal(order, names) {
		return "", fmt.Errorf("served %v, want the order of arrival %v", order, names)
	}
	return "bob, carol and dave line up while alice holds; served in the order they came: " + strings.Join(order, ", "), nil
}

// rw: readers share, a writer waits for them.
func (d *demoRun) rw(ctx context.Context) (string, error) {
	name := d.name("rw")
	var readers []*core.Lease
	for i := range 3 {
		l, err := d.clients[i].RWMutex(name).TryRLock(ctx)
		if err != nil {
			return "", fmt.Errorf("reader %d's TryRLock: %w", i+1, err)
		}
		readers = append(readers, l)
	}
	w := d.clients[3].RWMutex(name)
	if l, err := w.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		l.Unlock(ctx)
		return "", fmt.Errorf("the writer's TryLock among readers: got %v, want ErrNotAcquired", err)
	}
	got := startLock(ctx, w.Lock)
	time.Sleep(100 * time.Millisecond)
	var left time.Time
	for _, r := range readers {
		left = time.Now()
		if err := r.Unlock(ctx); err != nil {
			return "", err
		}
	}
	r := <-got
	if r.err != nil {
		return "", fmt.Errorf("the writer's Lock: %w", r.err)
	}
	defer r.l.Unlock(ctx)
	return fmt.Sprintf("3 readers hold it at once; the writer's TryLock is refused; its Lock gets it %s after the last reader began to leave", ms(r.at.Sub(left))), nil
}

// semaphore: two permits, a third acquisition waits for a release.
func (d *demoRun) semaphore(ctx context.Context) (string, error) {
	name := d.name("sem")
	var held []*core.Lease
	for i := range 2 {
		l, err := d.clients[i].Semaphore(name, 2).TryAcquire(ctx, 1)
		if err != nil {
			return "", fmt.Errorf("permit %d: %w", i+1, err)
		}
		held = append(held, l)
	}
	third := d.clients[2].Semaphore(name, 2)
	if l, err := third.TryAcquire(ctx, 1); !errors.Is(err, core.ErrNotAcquired) {
		l.Unlock(ctx)
		return "", fmt.Errorf("a third permit of 2: got %v, want ErrNotAcquired", err)
	}
	if err := held[0].Unlock(ctx); err != nil {
		return "", err
	}
	l, err := third.TryAcquire(ctx, 1)
	if err != nil {
		return "", fmt.Errorf("a permit after a release: %w", err)
	}
	l.Unlock(ctx)
	held[1].Unlock(ctx)
	return "2 permits: alice and bob take one each, carol's TryAcquire is refused, and succeeds once alice releases", nil
}

// latch: a waiter returns when three workers have counted down.
func (d *demoRun) latch(ctx context.Context) (string, error) {
	name := d.name("latch")
	if ok, err := d.clients[0].Latch(name).TrySetCount(ctx, 3); err != nil || !ok {
		return "", fmt.Errorf("TrySetCount(3): %v, %v", ok, err)
	}
	type result struct {
		at  time.Time
		err error
	}
	got := make(chan result, 1)
	go func() {
		err := d.clients[0].Latch(name).Wait(ctx)
		got <- result{time.Now(), err}
	}()
	time.Sleep(50 * time.Millisecond)
	var last time.Time
	for i := 1; i <= 3; i++ {
		last = time.Now()
		if err := d.clients[i].Latch(name).CountDown(ctx); err != nil {
			return "", err
		}
	}
	r := <-got
	if r.err != nil {
		return "", r.err
	}
	return fmt.Sprintf("alice waits on a count of 3; bob, carol and dave count down; her Wait returns %s after the last CountDown began", ms(r.at.Sub(last))), nil
}

// multi: several names at once, all or nothing.
func (d *demoRun) multi(ctx context.Context) (string, error) {
	a, b, c := d.name("multi-a"), d.name("multi-b"), d.name("multi-c")
	l, err := d.clients[0].MultiLock([]string{a, b}).TryLock(ctx)
	if err != nil {
		return "", err
	}
	defer l.Unlock(ctx)
	if l2, err := d.clients[1].MultiLock([]string{b, c}).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		l2.Unlock(ctx)
		return "", fmt.Errorf("MultiLock {b, c} while {a, b} is held: got %v, want ErrNotAcquired", err)
	}
	l3, err := d.clients[1].MultiLock([]string{c}).TryLock(ctx)
	if err != nil {
		return "", fmt.Errorf("MultiLock {c}, which no one holds: %w (it must not keep a part of a failed attempt)", err)
	}
	l3.Unlock(ctx)
	return "alice holds {a, b}; bob's TryLock of {b, c} is refused and keeps nothing: {c} alone is free", nil
}

// drivers: two clients contend for a Mutex through each client library.
func (d *demoRun) drivers(ctx context.Context) (string, error) {
	var out []string
	for _, drv := range drivers {
		first, second, err := contend(ctx, d.urls, d.name("driver-"+drv.name), drv.open)
		if err != nil {
			return "", fmt.Errorf("%s: %w", drv.name, err)
		}
		out = append(out, drv.name+" "+tokens(first, second))
	}
	note := ""
	if len(drivers) == 1 {
		note = " (go-redis and rueidis too: build with -tags redlock_goredis,redlock_rueidis)"
	}
	return "lock, contend, unlock, fence with each client library built in: " + strings.Join(out, ", ") + note, nil
}

// contend has two clients, each with its own connections, contend for one
// Mutex and returns the fencing tokens of their leases.
func contend(ctx context.Context, urls []string, name string, open opener) (first, second uint64, err error) {
	var clients [2]*core.Client
	for i := range clients {
		// Poll: redigo speaks only RESP2, and TryLock does not wait.
		c, closeClient, err := connect(open, urls, core.WithKeyPrefix(demoPrefix), core.WithWaitStrategy(core.Poll), core.WithTTL(5*time.Second))
		if err != nil {
			return 0, 0, err
		}
		defer closeClient()
		clients[i] = c
	}
	a, b := clients[0].Mutex(name), clients[1].Mutex(name)
	la, err := a.TryLock(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("first client's TryLock: %w", err)
	}
	if l, err := b.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		l.Unlock(ctx)
		return 0, 0, fmt.Errorf("second client's TryLock while the lock is held: got %v, want ErrNotAcquired", err)
	}
	if err := la.Unlock(ctx); err != nil {
		return 0, 0, fmt.Errorf("first client's Unlock: %w", err)
	}
	lb, err := b.TryLock(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("second client's TryLock after the release: %w", err)
	}
	if err := lb.Unlock(ctx); err != nil {
		return 0, 0, fmt.Errorf("second client's Unlock: %w", err)
	}
	if lb.Token() <= la.Token() {
		return 0, 0, fmt.Errorf("fencing token went from %d to %d; it must increase", la.Token(), lb.Token())
	}
	return la.Token(), lb.Token(), nil
}

// locked is a Lock's result, and when it returned.
type locked struct {
	l   *core.Lease
	at  time.Time
	err error
}

// startLock runs lock in the background; its result arrives on the
// channel.
func startLock(ctx context.Context, lock func(context.Context) (*core.Lease, error)) <-chan locked {
	got := make(chan locked, 1)
	go func() {
		l, err := lock(ctx)
		got <- locked{l, time.Now(), err}
	}()
	return got
}
