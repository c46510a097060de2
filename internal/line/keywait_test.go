package line

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// fakeNotifier records subscriptions and lets a test deliver events.
type fakeNotifier struct {
	driver.Driver // only Name is called

	mu      sync.Mutex
	deliver func(channel, payload string)
	subs    []string // SUBSCRIBE and UNSUBSCRIBE, in order
	back    func()   // OnResubscribed's
}

func (f *fakeNotifier) OnResubscribed(back func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.back = back
}

// resubscribe tells the Notifier that the connection came back.
func (f *fakeNotifier) resubscribe() {
	f.mu.Lock()
	back := f.back
	f.mu.Unlock()
	back()
}

func (f *fakeNotifier) Name() string                    { return "fake" }
func (f *fakeNotifier) DB(context.Context) (int, error) { return 3, nil }
func (f *fakeNotifier) EachServer(context.Context, func(context.Context, driver.Server) error) error {
	return nil
}

func (f *fakeNotifier) Listen(_ context.Context, deliver func(string, string)) (driver.Listener, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deliver = deliver
	return f, nil
}

func (f *fakeNotifier) Subscribe(_ context.Context, chs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, "+"+chs[0])
	return nil
}

func (f *fakeNotifier) Unsubscribe(_ context.Context, chs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subs = append(f.subs, "-"+chs[0])
	return nil
}

func (f *fakeNotifier) Close() error { return nil }

func (f *fakeNotifier) event(key, event string) {
	f.mu.Lock()
	deliver := f.deliver
	f.mu.Unlock()
	deliver("__keyspace@3__:"+key, event)
}

func newFakeNotifier(t testing.TB) (*Notifier, *fakeNotifier, *Options) {
	f := &fakeNotifier{}
	o := Options{Backoff: Backoff{Base: time.Millisecond, Cap: time.Hour, Multiplier: 2}, NodeTimeout: 50 * time.Millisecond}
	n := newTestNotifier(t, 0, f)
	n.subs = []*subscriber{{nt: f}}
	return n, f, &o
}

// waiting is a watch joined to its key and blocked in wait.
type waiting struct {
	w      watch
	cancel context.CancelFunc
	done   chan error
}

func startWaiting(t *testing.T, n *Notifier, o *Options, key string) *waiting {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := n.watch(ctx, o, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.wait(ctx, 0, time.Hour); err != nil { // joins, returns at once
		t.Fatal(err)
	}
	wt := &waiting{w: w, cancel: cancel, done: make(chan error, 1)}
	go func() { wt.done <- w.wait(ctx, 1, time.Hour) }()
	return wt
}

func (wt *waiting) woken(d time.Duration) bool {
	select {
	case err := <-wt.done:
		return err == nil
	case <-time.After(d):
		return false
	}
}

func TestNotifyWakesOneWaiter(t *testing.T) {
	n, f, o := newFakeNotifier(t)
	a, b := startWaiting(t, n, o, "k"), startWaiting(t, n, o, "k")
	time.Sleep(20 * time.Millisecond) // both blocked in wait
	f.event("k", "set")               // not a release
	f.event("k", "del")
	if !a.woken(time.Second) {
		t.Fatal("the oldest waiter was not woken by del")
	}
	if b.woken(100 * time.Millisecond) {
		t.Fatal("one del woke two waiters")
	}
	a.w.stop()
	f.event("k", "expired")
	if !b.woken(time.Second) {
		t.Fatal("the next waiter was not woken by expired")
	}
	b.w.stop()
	if want := []string{"+__keyspace@3__:k", "-__keyspace@3__:k"}; !slices.Equal(f.subs, want) {
		t.Fatalf("subscriptions %v, want %v", f.subs, want)
	}
}

// A waiter cancelled after it was woken, before its attempt, hands the
// wake-up on.
func TestNotifyCancelledWaiterHandsOn(t *testing.T) {
	n, f, o := newFakeNotifier(t)
	a, b := startWaiting(t, n, o, "k"), startWaiting(t, n, o, "k")
	time.Sleep(20 * time.Millisecond)
	f.event("k", "del")
	if !a.woken(time.Second) {
		t.Fatal("the oldest waiter was not woken")
	}
	a.cancel()
	a.w.stop()
	if !b.woken(time.Second) {
		t.Fatal("the wake-up of a cancelled waiter was not handed on")
	}
	b.w.stop()
}

// A release while every waiter is busy attempting is kept, not lost.
func TestNotifyWakeWhileAttempting(t *testing.T) {
	n, f, o := newFakeNotifier(t)
	ctx := context.Background()
	w, _ := n.watch(ctx, o, "k")
	if err := w.wait(ctx, 0, time.Hour); err != nil {
		t.Fatal(err)
	}
	f.event("k", "del") // during the attempt that follows the join
	start := time.Now()
	if err := w.wait(ctx, 1, time.Hour); err != nil || time.Since(start) > time.Second {
		t.Fatalf("wait after a release during the attempt: %v after %v", err, time.Since(start))
	}
	w.stop()
}

func TestNotifyCloseEndsWait(t *testing.T) {
	n, _, o := newFakeNotifier(t)
	a := startWaiting(t, n, o, "k")
	n.g.Close()
	if err := <-a.done; !errors.Is(err, ErrClosed) {
		t.Fatalf("wait after Close: got %v, want ErrClosed", err)
	}
	a.w.stop()
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	w, _ := n.watch(ctx, o, "k") // no I/O: the first wait reports the close
	if err := w.wait(ctx, 0, time.Hour); !errors.Is(err, ErrClosed) {
		t.Fatalf("first wait on a closed Notifier: got %v, want ErrClosed", err)
	}
	w.stop()
}

// A subscription that came back on a new connection wakes every waiter
// of the Client, on every key and in every line: a release while it was
// gone told none of them.
func TestResubscribedWakesEveryWaiter(t *testing.T) {
	n, f, o := newFakeNotifier(t)
	ws := []*waiting{startWaiting(t, n, o, "k"), startWaiting(t, n, o, "k"), startWaiting(t, n, o, "other")}
	ticket := n.Register("p{x}:t:cid:R", "tok", nil)
	defer n.DropTicket(ticket)
	time.Sleep(20 * time.Millisecond) // all blocked in wait
	f.resubscribe()
	for i, w := range ws {
		if !w.woken(time.Second) {
			t.Fatalf("waiter %d was not woken when the subscription came back", i)
		}
		w.w.stop()
	}
	select {
	case <-ticket.Wake:
	default:
		t.Fatal("the waiter in line was not woken when the subscription came back")
	}
}

// Resubscriptions in quick succession (a user who may publish on the
// Client's channel overflowing its connection's output buffer again and
// again) wake the waiters once per rewakeEvery, the last one too.
func TestResubscribedWakesBounded(t *testing.T) {
	n, f, _ := newFakeNotifier(t)
	n.subs[0].listener(context.Background(), n) // sets OnResubscribed
	defer n.Close()
	ticket := n.Register("p{x}:t:cid:R", "tok", nil)
	defer n.DropTicket(ticket)
	woken := func() bool {
		select {
		case <-ticket.Wake:
			return true
		default:
			return false
		}
	}
	f.resubscribe()
	if !woken() {
		t.Fatal("the first resubscription did not wake the waiter at once")
	}
	start := time.Now()
	for range 20 {
		f.resubscribe()
	}
	if woken() {
		t.Fatal("a resubscription right after another woke the waiter at once")
	}
	time.Sleep(rewakeEvery + 50*time.Millisecond)
	if !woken() {
		t.Fatalf("the resubscriptions after the first did not wake the waiter within %v", time.Since(start))
	}
	time.Sleep(rewakeEvery + 50*time.Millisecond)
	if woken() {
		t.Fatal("twenty resubscriptions in a row woke the waiter more than twice")
	}
}
