package conformance

import (
	"cmp"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreBound has competing Clients take 1 or 2 of 3 permits again
// and again, with TryAcquire and Acquire, two of them abandoning a lease
// to expire, and checks the history against the capacity model: the
// permits held in validity windows never exceed 3. The long cell records
// longAcquisitions with their releases, the others 300 operations.
func testSemaphoreBound(t *testing.T, e env) {
	const permits, clients = 3, 4
	acquisitions := 150
	if e.long() {
		acquisitions = int(longAcquisitions())
	}
	ctx, n := ctxFor(t, 5*time.Minute), name(t)
	// Short waits, so that the run is bound by the servers, not by sleeps;
	// a short TTL, so that the abandoned leases expire soon, but node
	// timeouts that a loaded test machine seldom hits; no fencing round
	// trip, which the bound does not depend on (FencingIncreases checks it).
	opts := []core.Option{
		core.WithTTL(time.Second), core.WithNodeTimeout(400 * time.Millisecond), core.WithFencing(false),
		core.WithBackoff(core.Backoff{Base: 100 * time.Microsecond, Cap: 2 * time.Millisecond, Multiplier: 2}),
	}
	h := newHistory()
	var (
		left       atomic.Int64
		overloaded atomic.Int64 // calls that found no quorum: a stalled machine, not a safety matter
		wg         sync.WaitGroup
	)
	left.Store(int64(acquisitions))
	errs := make(chan error, clients)
	for i := range clients {
		s := e.client(t, opts...).Semaphore(n, permits)
		wg.Go(func() {
			for r := 0; ; r++ {
				k := 1 + (i+r)%2
				call := time.Now()
				var l *core.Lease
				var err error
				if r%4 == 0 {
					l, err = s.TryAcquire(ctx, k)
				} else {
					l, err = s.Acquire(ctx, k)
				}
				if errors.Is(err, core.ErrNoQuorum) {
					overloaded.Add(1)
				}
				if errors.Is(err, core.ErrNotAcquired) || errors.Is(err, core.ErrNoQuorum) {
					continue
				}
				if err != nil {
					errs <- err
					return
				}
				last := left.Add(-1) < 0
				held := h.acquired(i, leaseOp{Permits: k}, call, l)
				if r == 3 && i < 2 { // this holder crashes: its permits come back at the TTL
					<-l.Done()
					held.expired()
					continue
				}
				// A lease that ran out while held (a stalled machine) is
				// ErrLost; the history has its window end at the deadline.
				// One whose release found no quorum stays held on the nodes
				// until its TTL, its window ending at the release call.
				err = held.release(func() error { return l.Unlock(ctx) })
				if errors.Is(err, core.ErrNoQuorum) {
					overloaded.Add(1)
				} else if err != nil && !errors.Is(err, core.ErrLost) {
					errs <- err
					return
				}
				if last {
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := h.count(func(any) bool { return true }); got < 2*acquisitions {
		t.Fatalf("only %d operations recorded, want %d", got, 2*acquisitions)
	}
	if k := overloaded.Load(); k > 0 {
		t.Logf("%d calls found no quorum (node timeouts on a loaded machine)", k)
	}
	if !e.long() {
		h.check(t, capacityModel(permits))
		return
	}
	// porcupine's search takes seconds on thousands of operations under -race;
	// for this model a sweep decides the same in milliseconds.
	if most, at := h.mostPermitsHeld(); most > permits {
		t.Fatalf("%d permits of %d were held at once, %v into the run", most, permits, at)
	}
}

// mostPermitsHeld returns the most permits that the recorded leases' windows
// held at one instant, and when. It decides capacityModel(n) exactly (the
// history is allowed iff the result is at most n): an acquisition taking
// effect at its return and an end at its call, the latest and earliest
// points their intervals allow, is the order that holds the fewest at
// every instant.
func (h *history) mostPermitsHeld() (int, time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	type event struct {
		at    int64
		delta int
	}
	events := make([]event, 0, len(h.ops))
	for _, op := range h.ops {
		if l := op.Input.(leaseOp); l.End {
			events = append(events, event{op.Call, -l.permits()})
		} else {
			events = append(events, event{op.Return, l.permits()})
		}
	}
	// Ends first at the same instant: a window closed as another opened.
	slices.SortFunc(events, func(a, b event) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	held, most, at := 0, 0, int64(0)
	for _, ev := range events {
		if held += ev.delta; held > most {
			most, at = held, ev.at
		}
	}
	return most, time.Duration(at)
}
