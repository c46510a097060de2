package conformance

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// observed is one event as a recording Observer saw it.
type observed struct {
	kind     string
	event    core.Event
	waited   bool
	attempts int
	ttl      time.Duration
	took     time.Duration // the wait of an acquisition, the hold of a release or loss
}

func (o observed) String() string {
	e := o.event
	return fmt.Sprintf("%s %s %s %v token=%d err=%v waited=%v attempts=%d ttl=%v", o.kind, e.Primitive, e.Name, e.Strategy, e.Token, e.Err, o.waited, o.attempts, o.ttl)
}

// eventRecorder is an Observer that keeps what it hears, losses apart: they
// are reported on a goroutine of their own.
type eventRecorder struct {
	mu     sync.Mutex
	events []observed
	lost   []observed
}

func (r *eventRecorder) add(to *[]observed, o observed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*to = append(*to, o)
}

func (r *eventRecorder) Acquired(e core.AcquireEvent) {
	r.add(&r.events, observed{kind: "Acquired", event: e.Event, waited: e.Waited, attempts: e.Attempts, took: e.Wait})
}

func (r *eventRecorder) Released(e core.ReleaseEvent) {
	r.add(&r.events, observed{kind: "Released", event: e.Event, took: e.Held})
}

func (r *eventRecorder) Extended(e core.ExtendEvent) {
	r.add(&r.events, observed{kind: "Extended", event: e.Event, ttl: e.TTL})
}

func (r *eventRecorder) Lost(e core.LostEvent) {
	r.add(&r.lost, observed{kind: "Lost", event: e.Event, took: e.Held})
}

func (r *eventRecorder) seen() (events, lost []observed) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events), slices.Clone(r.lost)
}

// testObserverSeesLeases checks that an Observer hears a Mutex's leases as
// they happen: acquisitions tried and waited for, a refusal, extensions,
// releases, and losses (the key deleted, then Extend or Unlock), each with its
// fields. The holder's Client observes every primitive; the waiter's Mutex
// has an Observer of its own, which replaces it. The Client's logger warns
// of the loss, and logs nothing at info.
func testObserverSeesLeases(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	holders, waiters := &eventRecorder{}, &eventRecorder{}
	log := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := e.client(t, core.WithObserver(holders), core.WithLogger(logger))
	m := c.Mutex(n)
	first := mustLock(t, ctx, m.TryLock)
	if _, err := m.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock of a held lock: got %v, want ErrNotAcquired", err)
	}
	type won struct {
		l   *core.Lease
		err error
	}
	waited := make(chan won, 1)
	go func() {
		l, err := c.Mutex(n, core.WithObserver(waiters)).Lock(ctx)
		waited <- won{l, err}
	}()
	e.awaitMutexWaiter(t, ctx, n)
	time.Sleep(50 * time.Millisecond) // a refused attempt or more
	if err := first.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-waited
	if w.err != nil {
		t.Fatal(w.err)
	}
	if err := w.l.Extend(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := w.l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	last := mustLock(t, ctx, m.TryLock)
	for i := range e.addrs {
		e.admin(t, i).Del(ctx, lockKey(n))
	}
	if err := last.Extend(ctx, time.Second); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Extend of a deleted lock: got %v, want ErrLost", err)
	}
	if err := last.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock of a lost lease: got %v, want ErrLost", err)
	}
	unseen := mustLock(t, ctx, m.TryLock) // lost, and found so by its Unlock
	for i := range e.addrs {
		e.admin(t, i).Del(ctx, lockKey(n))
	}
	if err := unseen.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock of a deleted lock: got %v, want ErrLost", err)
	}

	ev := func(kind string, token uint64, err error) observed {
		return observed{kind: kind, event: core.Event{Primitive: "Mutex", Name: n, Strategy: e.strategy, Token: token, Err: err}}
	}
	tried := func(o observed) observed { o.attempts = 1; return o }
	wantHolders := []observed{
		tried(ev("Acquired", first.Token(), nil)),
		tried(ev("Acquired", 0, core.ErrNotAcquired)),
		ev("Released", first.Token(), nil),
		tried(ev("Acquired", last.Token(), nil)),
		ev("Extended", last.Token(), core.ErrLost),
		ev("Released", last.Token(), core.ErrLost),
		tried(ev("Acquired", unseen.Token(), nil)),
		ev("Released", unseen.Token(), core.ErrLost),
	}
	wantHolders[4].ttl = time.Second
	wantWaiters := []observed{
		ev("Acquired", w.l.Token(), nil),
		ev("Extended", w.l.Token(), nil),
		ev("Released", w.l.Token(), nil),
	}
	wantWaiters[0].waited = true
	wantWaiters[1].ttl = 2 * time.Second

	got, _ := holders.seen()
	checkObserved(t, "the Client's Observer", got, wantHolders)
	got, lost := waiters.seen()
	if len(got) > 0 && got[0].attempts < 2 {
		t.Errorf("the waiter's Acquired counts %d attempts; it was refused before it won", got[0].attempts)
	}
	if len(got) > 0 {
		got[0].attempts = 0 // checked above
	}
	checkObserved(t, "the waiter's Observer", got, wantWaiters)
	if len(lost) > 0 {
		t.Errorf("the waiter's Observer heard a loss: %v", lost)
	}
	deadline := time.Now().Add(2 * time.Second)
	for _, lost = holders.seen(); len(lost) < 2 && time.Now().Before(deadline); _, lost = holders.seen() {
		time.Sleep(10 * time.Millisecond)
	}
	slices.SortFunc(lost, func(a, b observed) int { return cmp.Compare(a.event.Token, b.event.Token) })
	checkObserved(t, "the Client's Observer's losses", lost, []observed{ev("Lost", last.Token(), core.ErrLost), ev("Lost", unseen.Token(), core.ErrLost)})
	if !strings.Contains(log.String(), `level=WARN msg="redlock: lease lost`) || strings.Contains(log.String(), "level=INFO") {
		t.Errorf("the Client's log, which should warn of the loss and hold nothing at info:\n%s", log.String())
	}
}

// checkObserved compares got with want, errors by errors.Is; each
// acquisition, release and loss took some time.
func checkObserved(t *testing.T, who string, got, want []observed) {
	t.Helper()
	same := len(got) == len(want)
	for i := 0; same && i < len(got); i++ {
		g, w := got[i], want[i]
		gErr, wErr := g.event.Err, w.event.Err
		g.event.Err, w.event.Err, g.took = nil, nil, 0
		same = g == w && (gErr == nil) == (wErr == nil) && (wErr == nil || errors.Is(gErr, wErr))
		if same && got[i].kind != "Extended" && got[i].took <= 0 {
			t.Errorf("%s: %v took %v", who, got[i], got[i].took)
		}
	}
	if !same {
		t.Errorf("%s heard:\n%s\nwant:\n%s", who, lines(got), lines(want))
	}
}

func lines(os []observed) string {
	s := ""
	for _, o := range os {
		s += "  " + o.String() + "\n"
	}
	return s
}

var _ core.Observer = (*eventRecorder)(nil)
