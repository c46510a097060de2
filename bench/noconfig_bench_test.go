package bench_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// deniedConfig makes an ACL user that may do anything but CONFIG on the
// first node, clears the node's notify-keyspace-events for the rest of
// the benchmark (putting back what was there after it), and returns an
// opener of go-redis drivers logged in as that user.
func deniedConfig(b *testing.B) func(*testing.B, string) core.Driver {
	ctx := context.Background()
	node := testenv.Nodes(b)[0]
	admin := redis.NewClient(&redis.Options{Addr: node})
	b.Cleanup(func() { admin.Close() })
	user, password := "bench-no-config", "bench-"+strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := admin.Do(ctx, "ACL", "SETUSER", user, "reset", "on", ">"+password, "~*", "&*", "+@all", "-config").Err(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { admin.Do(ctx, "ACL", "DELUSER", user) })
	was, err := admin.ConfigGet(ctx, "notify-keyspace-events").Result()
	if err != nil {
		b.Fatal(err)
	}
	if err := admin.ConfigSet(ctx, "notify-keyspace-events", "").Err(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { admin.ConfigSet(ctx, "notify-keyspace-events", was["notify-keyspace-events"]) })
	return func(b *testing.B, addr string) core.Driver {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Username: user, Password: password, ContextTimeoutEnabled: true})
		b.Cleanup(func() { rdb.Close() })
		d, err := goredis.New(rdb)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
}

// BenchmarkVanishedLock measures what keyspace events buy a Notify
// waiter when a lock goes without a release: a holder that died (it
// never releases; its key expires at its TTL, 300ms) and an operator's
// DEL of the key 100ms into a holder's 2s TTL, for a Mutex waiter behind
// a Mutex holder and an RWMutex reader behind a writer. It reports how
// long after the key went the waiter got the lock (late-p50-ms,
// late-max-ms), with the events set (the Client sets them) and with
// CONFIG denied and none set, where only the waiter's own timer at the
// holder's TTL wakes it. b.N is the number of vanished locks (run it with
// -benchtime 20x).
func BenchmarkVanishedLock(b *testing.B) {
	for _, p := range []vanishing{
		{"Mutex", "", func(c *core.Client, name string, ttl time.Duration) func(context.Context) (*core.Lease, error) {
			return c.Mutex(name, core.WithTTL(ttl)).TryLock
		}, func(c *core.Client, name string) func(context.Context) (*core.Lease, error) {
			return c.Mutex(name, core.WithTTL(5*time.Second)).Lock
		}},
		{"RWMutex-reader", ":rw:w", func(c *core.Client, name string, ttl time.Duration) func(context.Context) (*core.Lease, error) {
			return c.RWMutex(name, core.WithTTL(ttl)).TryLock
		}, func(c *core.Client, name string) func(context.Context) (*core.Lease, error) {
			return c.RWMutex(name, core.WithTTL(5*time.Second)).RLock
		}},
	} {
		for _, how := range []struct {
			name       string
			ttl, after time.Duration // the holder's TTL; when the key goes by DEL (0: it expires)
		}{{"expired", 300 * time.Millisecond, 0}, {"deleted", 2 * time.Second, 100 * time.Millisecond}} {
			b.Run(p.name+"/"+how.name+"/keyspace-events", func(b *testing.B) { benchVanished(b, p, benchDriver, how.ttl, how.after) })
			b.Run(p.name+"/"+how.name+"/CONFIG-denied", func(b *testing.B) { benchVanished(b, p, deniedConfig(b), how.ttl, how.after) })
		}
	}
}

// vanishing is a holder's lock and a waiter's behind it; the holder's
// key is the lock key with suffix.
type vanishing struct {
	name, suffix string
	hold         func(c *core.Client, name string, ttl time.Duration) func(context.Context) (*core.Lease, error)
	wait         func(c *core.Client, name string) func(context.Context) (*core.Lease, error)
}

func benchVanished(b *testing.B, p vanishing, open func(*testing.B, string) core.Driver, ttl, after time.Duration) {
	ctx := context.Background()
	node := testenv.Nodes(b)[0]
	admin := redis.NewClient(&redis.Options{Addr: node})
	b.Cleanup(func() { admin.Close() })
	holder := benchClientOver(b, []core.Driver{open(b, node)}, core.WithWaitStrategy(core.Notify))
	waiter := benchClientOver(b, []core.Driver{open(b, node)}, core.WithWaitStrategy(core.Notify))
	var late []time.Duration
	for i := range b.N {
		name := "bench-vanished-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		gone := time.Now().Add(ttl)
		// The holder's lease is dropped: nothing extends or releases it.
		if _, err := p.hold(holder, name, ttl)(ctx); err != nil {
			b.Fatal(err)
		}
		deleted := make(chan time.Time, 1)
		if after > 0 {
			time.AfterFunc(after, func() {
				at := time.Now()
				if admin.Del(ctx, "redlock:{"+name+"}"+p.suffix).Val() != 1 {
					at = time.Time{} // the key was not there: the layout changed
				}
				deleted <- at
			})
		}
		l, err := p.wait(waiter, name)(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if after > 0 {
			if gone = <-deleted; gone.IsZero() {
				b.Fatalf("no key %q to delete", "redlock:{"+name+"}"+p.suffix)
			}
		}
		late = append(late, time.Since(gone))
		if err := l.Unlock(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(ms(percentile(late, 50)), "late-p50-ms")
	b.ReportMetric(ms(percentile(late, 100)), "late-max-ms")
}

// BenchmarkLostLease measures what keyspace events buy a holder: a key
// deleted by hand 100ms into a lease of 2s, how long until the lease's
// Done closes (lost-p50-ms, lost-max-ms), with the events set and with
// CONFIG denied and none set, where Done closes at the lease's end (or
// at the watchdog's next extension, with WithAutoExtend). b.N is the
// number of lost leases (run it with -benchtime 10x).
func BenchmarkLostLease(b *testing.B) {
	b.Run("keyspace-events", func(b *testing.B) { benchLostLease(b, benchDriver) })
	b.Run("CONFIG-denied", func(b *testing.B) { benchLostLease(b, deniedConfig(b)) })
}

func benchLostLease(b *testing.B, open func(*testing.B, string) core.Driver) {
	const ttl, after = 2 * time.Second, 100 * time.Millisecond
	ctx := context.Background()
	node := testenv.Nodes(b)[0]
	admin := redis.NewClient(&redis.Options{Addr: node})
	b.Cleanup(func() { admin.Close() })
	holder := benchClientOver(b, []core.Driver{open(b, node)}, core.WithWaitStrategy(core.Notify))
	var lost []time.Duration
	for i := range b.N {
		name := "bench-lost-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		l, err := holder.Mutex(name, core.WithTTL(ttl)).TryLock(ctx)
		if err != nil {
			b.Fatal(err)
		}
		done := l.Done()
		time.Sleep(after) // the lease listens meanwhile, where it can
		gone := time.Now()
		if admin.Del(ctx, "redlock:{"+name+"}").Val() != 1 {
			b.Fatalf("no key %q to delete", "redlock:{"+name+"}")
		}
		<-done
		lost = append(lost, time.Since(gone))
	}
	b.ReportMetric(ms(percentile(lost, 50)), "lost-p50-ms")
	b.ReportMetric(ms(percentile(lost, 100)), "lost-max-ms")
}
