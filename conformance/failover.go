package conformance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
)

// testFailover: on a Redis Cluster of its own, one master and its
// replica, A's lease (replicated) survives the master's crash and the
// replica's promotion. A Lock that B starts at the crash waits the
// failover out, where ErrNoQuorum at once would tell the user to check
// servers that are coming back; A extends its lease within 5s of the
// promotion, its client having found the new master (go-redis would
// call the dead one until its next reload of the slots); and B holds
// the lock after A's release, with a higher token.
func testFailover(t *testing.T, e env) {
	ctx, n := ctxFor(t, time.Minute), name(t)
	lc := ownServers(t, ctx, e, 1)
	master, replica := lc.Masters[0], lc.Replicas[0]
	a, b := e.ownClient(t, lc, 10*time.Second), e.ownClient(t, lc, 10*time.Second)
	l, err := a.Mutex(n).Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// B has heard from the cluster before the crash, as a Client in use
	// has: one that never did takes a broken connection for a cluster
	// that is down (see testBrokenClusterIsDown).
	if _, err := b.Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("B's TryLock while A holds: got %v, want ErrNotAcquired", err)
	}
	r := plain(t, replica)
	if err := replicated(ctx, plain(t, master), r); err != nil {
		t.Fatal(err)
	}
	if err := lc.Kill(master); err != nil {
		t.Fatal(err)
	}
	type result struct {
		l   *core.Lease
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := b.Mutex(n).Lock(ctx)
		got <- result{l, err}
	}()
	time.Sleep(500 * time.Millisecond) // B's attempts meet the dead master
	select {
	case r := <-got:
		t.Fatalf("B's Lock, started at the master's crash, returned before any failover: (%v, %v); it must wait it out", r.l, r.err)
	default:
	}
	if err := r.Do(ctx, "CLUSTER", "FAILOVER", "TAKEOVER").Err(); err != nil {
		t.Fatalf("CLUSTER FAILOVER TAKEOVER on the replica: %v", err)
	}
	promoted := time.Now()
	for {
		err = l.Extend(ctx, 10*time.Second)
		if err == nil || time.Since(promoted) > 5*time.Second {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("A's Extend still failed 5s after the replica took over: %v", err)
	}
	t.Logf("A extended its lease %v after the promotion", time.Since(promoted).Round(time.Millisecond))
	select {
	case r := <-got:
		t.Fatalf("B's Lock returned (%v, %v) while A held the lock", r.l, r.err)
	default:
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatalf("A's Unlock on the new master: %v", err)
	}
	select {
	case r := <-got:
		if r.err != nil {
			t.Fatalf("B's Lock after A's release: %v", r.err)
		}
		defer r.l.Unlock(ctx)
		if r.l.Token() <= l.Token() {
			t.Fatalf("B's token %d after A's %d", r.l.Token(), l.Token())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B's Lock did not return within 5s of A's release")
	}
}

// replicated waits until the replica has processed everything the master
// had written when it was called, up to 5s.
func replicated(ctx context.Context, master, replica *redis.Client) error {
	offset := func(c *redis.Client, field string) (int64, error) {
		info, err := c.Info(ctx, "replication").Result()
		if err != nil {
			return 0, err
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
				return strconv.ParseInt(v, 10, 64)
			}
		}
		return 0, fmt.Errorf("no %s in INFO replication", field)
	}
	want, err := offset(master, "master_repl_offset")
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		have, err := offset(replica, "slave_repl_offset")
		if err == nil && have >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the replica processed the replication stream up to %d (%v), not the master's %d, within 5s", have, err, want)
		}
	}
}

// testBrokenClusterIsDown: a Client whose Cluster never answered it (its
// address accepts connections and closes them at once: a load balancer
// without a backend, a crashed proxy) takes the broken connections for a
// cluster that is down, not one failing over: TryLock returns ErrNoQuorum
// at once, not ErrUnavailable, and each Lock waits until its context ends
// and returns the context's error joined with ErrNoQuorum.
func testBrokenClusterIsDown(t *testing.T, e env) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	d, refused := e.openCluster(t, ln.Addr().String())
	if refused != "" { // the client connects as it is made (rueidis), and fails then
		t.Logf("the cluster client refused the address at once: %s", refused)
		return
	}
	c := e.clientOver(t, []core.Driver{d}, core.WithNodeTimeout(200*time.Millisecond))
	n := name(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	l, err := c.Mutex(n).TryLock(ctx)
	if took := time.Since(start); l != nil || !errors.Is(err, core.ErrNoQuorum) || errors.Is(err, core.ErrUnavailable) || took > 2*time.Second {
		t.Errorf("TryLock on a cluster that closes every connection: got (%v, %v) after %v, want ErrNoQuorum at once", l, err, took.Round(time.Millisecond))
	}
	for what, lock := range map[string]func(context.Context) (*core.Lease, error){
		"Mutex.Lock": c.Mutex(n).Lock, "FairMutex.Lock": c.FairMutex(n).Lock, "RWMutex.RLock": c.RWMutex(n).RLock,
	} {
		wait, cancel := cancelledAfter(ctx, 500*time.Millisecond)
		l, err := lock(wait)
		cancel()
		if l != nil || !errors.Is(err, context.Canceled) || !errors.Is(err, core.ErrNoQuorum) || errors.Is(err, core.ErrUnavailable) {
			t.Errorf("%s on a cluster that closes every connection: got (%v, %v), want context.Canceled joined with ErrNoQuorum", what, l, err)
		}
	}
}

// openCluster opens the harness's cluster driver over seeds, and returns
// what the harness failed with instead of failing t: a client that
// connects as it is made fails there on a cluster that is down.
func (e env) openCluster(t *testing.T, seeds string) (d core.Driver, refused string) {
	r := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() { // the harness's Fatal ends this goroutine
		defer close(done)
		d = e.h.OpenCluster(r, strings.Split(seeds, ","))
	}()
	<-done
	return d, r.fatal
}

// fatalRecorder is a testing.TB whose Fatal and Fatalf note the failure and
// end the goroutine, without failing the test.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Helper() {}

func (r *fatalRecorder) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *fatalRecorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
