package conformance

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

func runRWMutex(t *testing.T, e env) {
	cases := linedLockCases(e, "RWMutex")
	maps.Copy(cases, map[string]func(*testing.T, env){
		"BadInput":              testRWBadInput,
		"ReadersShare":          testRWReadersShare,
		"WriterWaitsForReaders": testRWWriterWaits,
		"WriterKeepsReadersOut": testRWWriterKeepsReadersOut,
		"WriterNotStarved":      testRWWriterNotStarved,
		"CrashedReader":         testRWCrashedReader,
		"CrashedWriter":         testRWCrashedWriter,
		"CrashedWaitingWriter":  testRWCrashedWaitingWriter,
		"GiveUpLeaves":          testRWGiveUp,
		"AutoExtend":            testRWAutoExtend,
		"ExpiryLosesLease":      testRWExpiry,
		"History":               testRWHistory,
	})
	if e.strategy == core.Poll { // a read; the wait strategy plays no part
		cases["State"] = testRWState
	}
	maps.Copy(cases, downgradeCases(e))
	maps.Copy(cases, forceCases(e, "RWMutex", ""))
	maps.Copy(cases, metadataCases("RWMutex"))
	maps.Copy(cases, forceCases(e, "RWMutexOwned", "Owned"))
	maps.Copy(cases, reentrantCases(e, "RWMutex"))
	if e.strategy == core.Poll {
		cases["ForceFreesReaders"] = testForceFreesReaders
	}
	if e.redialed() { // the writer's are linedLockCases'
		cases["ReconnectingReaderServed"] = testReconnectingWaiterServed("RWMutexRead")
		cases["LateSubscriptionReaderServed"] = testLateSubscriptionWaiterServed("RWMutexRead")
	}
	if len(e.addrs) >= 3 {
		cases["MinorityDown"] = testRWMinorityDown
		cases["MajorityDown"] = testRWMajorityDown
		maps.Copy(cases, landsLateCasesFor(e, "RWMutexRead", "Read"))
	}
	runCases(t, e, cases)
}

func testRWBadInput(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.client(t)
	expectBadLockInput(t, ctx, n, func(name string, opts ...core.Option) leaseCalls {
		m := c.RWMutex(name, opts...)
		return leaseCalls{"TryRLock": m.TryRLock, "RLock": m.RLock, "TryLock": m.TryLock, "Lock": m.Lock}
	}, badOption{"a TTL below the drift allowance", core.WithTTL(2 * time.Millisecond)})
	if k, _ := e.admin(t, 0).Exists(ctx, rwKey(n, ":w"), rwKey(n, ":r"), rwKey(n, ":wq"), rwKey(n, ":rq")).Result(); k != 0 {
		t.Errorf("bad input wrote %d keys", k)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RWMutex(n).RLock(ctx); !errors.Is(err, core.ErrClosed) {
		t.Errorf("RLock on a closed client: got %v, want ErrClosed", err)
	}
	if _, err := c.RWMutex(n).TryLock(ctx); !errors.Is(err, core.ErrClosed) {
		t.Errorf("TryLock on a closed client: got %v, want ErrClosed", err)
	}
}

func testRWReadersShare(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	a, b, w := e.client(t).RWMutex(n), e.client(t).RWMutex(n), e.client(t).RWMutex(n)
	ra := mustLock(t, ctx, a.RLock)
	rb, err := b.TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock beside another reader: %v", err)
	}
	if _, err := w.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock with two readers: got %v, want ErrNotAcquired", err)
	}
	if err := ra.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock with one reader left: got %v, want ErrNotAcquired", err)
	}
	if err := rb.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := rb.Unlock(ctx); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("second Unlock of a read lease: got %v, want ErrNotHeld", err)
	}
	wl, err := w.TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock once the readers left: %v", err)
	}
	// On one node every token is drawn in order. With a quorum, read
	// tokens are not made durable, and a later write token is only
	// guaranteed to exceed earlier write tokens (see RWMutex).
	if len(e.addrs) == 1 && wl.Token() <= rb.Token() {
		t.Errorf("the writer's token %d is not above the reader's %d", wl.Token(), rb.Token())
	}
	if _, err := a.TryRLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryRLock while a writer holds: got %v, want ErrNotAcquired", err)
	}
	if _, err := b.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock while a writer holds: got %v, want ErrNotAcquired", err)
	}
	if err := wl.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := a.TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock once the writer left: %v", err)
	}
	if r.Token() <= wl.Token() {
		t.Errorf("the reader's token %d is not above the writer's %d", r.Token(), wl.Token())
	}
	r.Unlock(ctx)
}

// writerBehindReader takes a read lease of the RWMutex n, then starts a
// writer's Lock and returns once the writer waits in line.
func (e env) writerBehindReader(t *testing.T, ctx context.Context, n string) (*core.Lease, <-chan locked) {
	t.Helper()
	r := mustLock(t, ctx, e.client(t).RWMutex(n).RLock)
	return r, e.inLine(t, ctx, rwKey(n, ":wq"), 1, e.client(t, patient).RWMutex(n).Lock)
}

// testRWWriterWaits: the last reader's release wakes a waiting writer.
func testRWWriterWaits(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	r, got := e.writerBehindReader(t, ctx, n)
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	if err := r.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	expectWoken(t, got, start).Unlock(ctx)
}

// testRWWriterKeepsReadersOut: while a writer waits, no new reader enters;
// when it is through, the waiting readers are woken.
func testRWWriterKeepsReadersOut(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	r1, writer := e.writerBehindReader(t, ctx, n)
	if _, err := e.client(t).RWMutex(n).TryRLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryRLock while a writer waits: got %v, want ErrNotAcquired", err)
	}
	reader := e.inLine(t, ctx, rwKey(n, ":rq"), 1, e.client(t, patient).RWMutex(n).RLock)
	if err := r1.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-writer
	if w.err != nil {
		t.Fatalf("the writer's Lock: %v", w.err)
	}
	select {
	case r := <-reader:
		t.Fatalf("a reader acquired (err %v) while the writer held the lock", r.err)
	case <-time.After(100 * time.Millisecond):
	}
	start := time.Now()
	if err := w.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	expectWoken(t, reader, start).Unlock(ctx)
}

// testRWWriterNotStarved has readers take overlapping read leases without
// pause; a writer must still get the lock soon. The read leases last a
// second: one whose release a loaded machine timed out holds the writer
// up until then, not for the default TTL.
func testRWWriterNotStarved(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const readers, hold = 4, 30 * time.Millisecond
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, readers)
	for i := range readers {
		m := e.client(t).RWMutex(n, core.WithTTL(time.Second))
		wg.Go(func() {
			time.Sleep(time.Duration(i) * hold / readers) // staggered, so that some reader always holds
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, err := m.RLock(ctx)
				if err != nil {
					errs <- err
					return
				}
				time.Sleep(hold)
				if err := l.Unlock(ctx); !released(err) {
					errs <- err
					return
				}
			}
		})
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	wl, err := e.client(t).RWMutex(n).Lock(ctx)
	took := time.Since(start)
	close(stop)
	if err == nil {
		wl.Unlock(ctx)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a reader: %v", err)
	}
	if err != nil {
		t.Fatalf("the writer's Lock among readers: %v", err)
	}
	if limit := 2 * time.Second; took > limit {
		t.Fatalf("the writer waited %v among continuous readers, want within %v", took, limit)
	}
}

// readLock and writeLock take an RWMutex's read and write leases.
func readLock(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
	return c.RWMutex(n, core.WithTTL(shortTTL)).RLock
}

func writeLock(c *core.Client, n string) func(context.Context) (*core.Lease, error) {
	return c.RWMutex(n, core.WithTTL(shortTTL)).Lock
}

// testRWCrashedReader abandons a reader's Client: its share frees at its
// TTL, and a waiting writer acquires within one retry interval after that.
func testRWCrashedReader(t *testing.T, e env) { e.crashHolder(t, readLock, writeLock) }

// testRWCrashedWriter abandons the writer's Client: a waiting reader
// acquires after its validity, within its TTL and one retry interval.
func testRWCrashedWriter(t *testing.T, e env) { e.crashHolder(t, writeLock, readLock) }

// testRWCrashedWaitingWriter abandons the Client of a writer that waits:
// it stops keeping readers out within its wait's lapse time (the TTL) and
// one retry interval.
func testRWCrashedWaitingWriter(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	const ttl = shortTTL
	r1 := mustLock(t, ctx, e.client(t, patient).RWMutex(n).RLock)
	defer r1.Unlock(ctx)
	crashed := e.client(t, patient)
	writer := e.inLine(t, ctx, rwKey(n, ":wq"), 1, crashed.RWMutex(n, core.WithTTL(ttl)).Lock)
	reader := e.client(t, patient).RWMutex(n, core.WithTTL(ttl))
	if _, err := reader.TryRLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryRLock while a writer waits: got %v, want ErrNotAcquired", err)
	}
	crashed.Close()
	at := time.Now()
	if w := <-writer; !errors.Is(w.err, core.ErrClosed) {
		t.Fatalf("Lock of the abandoned Client: got %v, want ErrClosed", w.err)
	}
	r := <-startLock(ctx, reader.RLock)
	if r.err != nil {
		t.Fatalf("RLock after the waiting writer crashed: %v", r.err)
	}
	defer r.l.Unlock(ctx)
	if d, limit := r.at.Sub(at), ttl+lineRetry(ttl)+crashSlack; d > limit {
		t.Fatalf("the reader acquired %v after the waiting writer crashed, want within %v", d, limit)
	}
}

// testRWGiveUp: a writer whose ctx ends or whose attempts run out stops
// keeping readers out at once.
func testRWGiveUp(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	r := mustLock(t, ctx, e.client(t).RWMutex(n).RLock)
	defer r.Unlock(ctx)
	e.giveUpsLeaveLine(t, ctx, rwKey(n, ":wq"), "writer", func(opts ...core.Option) func(context.Context) (*core.Lease, error) {
		return e.client(t).RWMutex(n, opts...).Lock
	})
	l, err := e.client(t).RWMutex(n).TryRLock(ctx)
	if err != nil {
		t.Fatalf("TryRLock after the writers gave up: %v", err)
	}
	l.Unlock(ctx)
}

func testRWAutoExtend(t *testing.T, e env) {
	ctx := ctxFor(t, 10*time.Second)
	const ttl = shortTTL
	var wg sync.WaitGroup
	for _, mode := range []string{"read", "write"} {
		n := name(t)
		m, other := e.client(t, patient).RWMutex(n, core.WithTTL(ttl), core.WithAutoExtend()), e.client(t, patient).RWMutex(n)
		lock, blocked := m.RLock, other.TryLock
		if mode == "write" {
			lock, blocked = m.Lock, other.TryRLock
		}
		wg.Go(func() {
			l, err := lock(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer l.Unlock(ctx)
			time.Sleep(2 * ttl)
			if err := l.Err(); err != nil {
				t.Errorf("auto-extended %s lease after 2 TTLs: %v", mode, err)
				return
			}
			if _, err := blocked(ctx); !errors.Is(err, core.ErrNotAcquired) {
				t.Errorf("the other mode beside an auto-extended %s lease: got %v, want ErrNotAcquired (the lease's Err is now %v)", mode, err, l.Err())
			}
			if err := l.Extend(ctx, 3*time.Second); err != nil {
				t.Errorf("Extend of a %s lease: %v", mode, err)
			} else if left := time.Until(l.Until()); left < 2*time.Second {
				t.Errorf("Until is %v away after Extend(3s) of a %s lease", left, mode)
			}
		})
	}
	wg.Wait()
}

// testRWExpiry: a read lease that is not extended is lost at its TTL, and
// its late Unlock does not touch the writer that came after.
func testRWExpiry(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	const ttl = shortTTL
	r := mustLock(t, ctx, e.client(t, patient).RWMutex(n, core.WithTTL(ttl)).RLock)
	select {
	case <-r.Done():
		if time.Now().Before(r.Until()) {
			t.Fatal("Done closed before the validity deadline")
		}
	case <-time.After(ttl + 2*time.Second):
		t.Fatal("Done still open a long time after the TTL")
	}
	if !errors.Is(r.Err(), core.ErrLost) {
		t.Fatalf("Err after expiry: got %v, want ErrLost", r.Err())
	}
	w, err := e.client(t, patient).RWMutex(n).Lock(ctx)
	if err != nil {
		t.Fatalf("Lock after the reader expired: %v", err)
	}
	if err := r.Extend(ctx, time.Second); !errors.Is(err, core.ErrNotHeld) {
		t.Fatalf("Extend of an expired read lease: got %v, want ErrLost (and ErrNotHeld)", err)
	}
	if err := r.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock of an expired read lease: got %v, want ErrLost", err)
	}
	if err := w.Unlock(ctx); err != nil {
		t.Fatalf("the writer's lock was touched by the expired reader's Unlock: %v", err)
	}
}

// testRWHistory has competing Clients take read and write leases, nine
// reads to one write, with the blocking and the Try calls, and checks the
// history against the reader/writer model, and that tokens increase from
// writer to writer and from a writer to the readers after it. The long
// cell records longAcquisitions and their releases.
func testRWHistory(t *testing.T, e env) {
	ctx, n := ctxFor(t, 5*time.Minute), name(t)
	const clients = 4
	total := e.historyTotal(t, 200)
	open := func(c *core.Client) *core.RWMutex { return c.RWMutex(n, core.WithTTL(5*time.Second)) }
	h := fencedHistory(t, ctx, e, clients, total, open, func(m *core.RWMutex, i, r int) turn {
		try := r%7 == 0
		lock, rlock := m.Lock, m.RLock
		if try {
			lock, rlock = m.TryLock, m.TryRLock
		}
		if (i+r)%10 == 0 {
			return turn{lock: lock, op: leaseOp{Mode: "write"}, try: try, exclusive: true}
		}
		return turn{lock: rlock, op: leaseOp{Mode: "read"}, try: try, hold: time.Duration(r%3) * time.Millisecond}
	})
	writes := h.count(func(in any) bool { return !in.(leaseOp).End && in.(leaseOp).Mode == "write" })
	if got := h.count(func(in any) bool { return !in.(leaseOp).End }); int64(got) < total || writes == 0 {
		t.Fatalf("only %d acquisitions (%d writes) recorded, want %d with some writes", got, writes, total)
	}
	h.check(t, rwModel())
}

func testRWMinorityDown(t *testing.T, e env) { e.minorityDown(t, readLock, writeLock) }

func testRWMajorityDown(t *testing.T, e env) {
	e.majorityDown(t, func(n string) []string {
		return []string{rwKey(n, ":w"), rwKey(n, ":r"), rwKey(n, ":wq"), rwKey(n, ":rq")}
	}, readLock, writeLock)
}
