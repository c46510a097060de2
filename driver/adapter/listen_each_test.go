package adapter

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// fakeListener records what it was asked to subscribe.
type fakeListener struct {
	mu       sync.Mutex
	channels map[string]bool
	closed   bool
	deliver  func(channel, payload string)
	back     func() // OnResubscribed's
}

func (f *fakeListener) OnResubscribed(back func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.back = back
}

// resubscribe calls what OnResubscribed set, as a connection that came
// back does.
func (f *fakeListener) resubscribe() {
	f.mu.Lock()
	back := f.back
	f.mu.Unlock()
	if back != nil {
		back()
	}
}

func (f *fakeListener) Subscribe(_ context.Context, cs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		f.channels[c] = true
	}
	return nil
}

func (f *fakeListener) Unsubscribe(_ context.Context, cs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range cs {
		delete(f.channels, c)
	}
	return nil
}

func (f *fakeListener) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeListener) subscribed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.channels))
}

// fakeCluster is a set of nodes that can grow.
type fakeCluster struct {
	mu    sync.Mutex
	nodes map[string]*fakeListener
}

func (c *fakeCluster) add(addr string) *fakeListener {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := &fakeListener{channels: map[string]bool{}}
	c.nodes[addr] = f
	return f
}

func (c *fakeCluster) list(context.Context) (map[string]ListenFunc, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]ListenFunc{}
	for addr, f := range c.nodes {
		out[addr] = func(_ context.Context, deliver func(string, string)) (driver.Listener, error) {
			f.deliver = deliver
			return f, nil
		}
	}
	return out, nil
}

func TestListenEach(t *testing.T) {
	ctx := context.Background()
	c := &fakeCluster{nodes: map[string]*fakeListener{}}
	a, b := c.add("a"), c.add("b")
	var got []string // no lock: deliver must be called one at a time (-race checks)
	l, err := ListenEach(ctx, c.list, nil, func(channel, _ string) { got = append(got, channel) })
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Subscribe(ctx, "k1", "k2"); err != nil {
		t.Fatal(err)
	}
	for name, f := range map[string]*fakeListener{"a": a, "b": b} {
		if s := f.subscribed(); !slices.Equal(s, []string{"k1", "k2"}) {
			t.Fatalf("node %s subscribed %v, want every channel", name, s)
		}
	}

	// A node that joins gets what was subscribed before, at the next Subscribe.
	n := c.add("c")
	if err := l.Unsubscribe(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	if err := l.Subscribe(ctx, "k3"); err != nil {
		t.Fatal(err)
	}
	if s := n.subscribed(); !slices.Equal(s, []string{"k2", "k3"}) {
		t.Fatalf("the new node subscribed %v, want [k2 k3]", s)
	}
	if s := a.subscribed(); !slices.Equal(s, []string{"k2", "k3"}) {
		t.Fatalf("node a subscribed %v after Unsubscribe(k1), Subscribe(k3)", s)
	}

	// Every node's events arrive, one at a time.
	var wg sync.WaitGroup
	for _, f := range []*fakeListener{a, b, n} {
		wg.Go(func() {
			for range 100 {
				f.deliver("k2", "del")
			}
		})
	}
	wg.Wait()
	if len(got) != 300 {
		t.Fatalf("delivered %d events, want 300", len(got))
	}

	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*fakeListener{a, b, n} {
		if !f.closed {
			t.Fatal("Close left a node's driver.Listener open")
		}
	}
	if err := l.Subscribe(ctx, "k4"); !errors.Is(err, errListenerClosed) {
		t.Fatalf("Subscribe after Close: got %v, want errListenerClosed", err)
	}
}

// TestListenEachResubscribed: a node's Listener that subscribed again on
// a new connection tells it through the cluster's, a node there before
// OnResubscribed as one that joined after.
func TestListenEachResubscribed(t *testing.T) {
	ctx := context.Background()
	c := &fakeCluster{nodes: map[string]*fakeListener{}}
	a := c.add("a")
	l, err := ListenEach(ctx, c.list, nil, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	rl, ok := l.(driver.ResubscribingListener)
	if !ok {
		t.Fatal("ListenEach's Listener is not a driver.ResubscribingListener")
	}
	var told atomic.Int32
	rl.OnResubscribed(func() { told.Add(1) })
	b := c.add("b")
	if err := l.Subscribe(ctx, "k1"); err != nil {
		t.Fatal(err)
	}
	a.resubscribe()
	b.resubscribe()
	if n := told.Load(); n != 2 {
		t.Fatalf("two nodes subscribed again; the cluster's Listener told %d", n)
	}
}

func TestListenEachNoNodes(t *testing.T) {
	none := func(context.Context) (map[string]ListenFunc, error) { return nil, nil }
	if _, err := ListenEach(context.Background(), none, nil, func(string, string) {}); err == nil {
		t.Fatal("ListenEach over no nodes succeeded")
	}
}

// fakeShardListener also holds sharded channels, refusing those of slots
// it does not serve (owners says who does), as a master answers MOVED.
type fakeShardListener struct {
	*fakeListener
	addr   string
	owners func(channel string) string
	shards map[string]bool
	lost   func(string)
}

func (f *fakeShardListener) SSubscribe(_ context.Context, ch string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owners(ch) != f.addr {
		return errors.New("MOVED")
	}
	f.shards[ch] = true
	return nil
}

func (f *fakeShardListener) SUnsubscribe(_ context.Context, ch string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.shards, ch)
	return nil
}

func (f *fakeShardListener) OnShardLost(lost func(string)) { f.lost = lost }

// Close closes the connection, and its sharded channels with it.
func (f *fakeShardListener) Close() error {
	f.mu.Lock()
	clear(f.shards)
	f.mu.Unlock()
	return f.fakeListener.Close()
}

func (f *fakeShardListener) holds(ch string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.shards[ch]
}

// drop drops ch as a master pushes SUNSUBSCRIBE when the slot moved.
func (f *fakeShardListener) drop(ch string) {
	f.mu.Lock()
	delete(f.shards, ch)
	f.mu.Unlock()
	f.lost(ch)
}

// TestListenEachShards: a sharded channel is subscribed on the node that
// serves it alone, placed again where its slot went when that node drops
// it or leaves, and dropped by SUnsubscribe.
func TestListenEachShards(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	owner := map[string]string{"ch": "a"}
	owners := func(ch string) string { mu.Lock(); defer mu.Unlock(); return owner[ch] }
	move := func(to string) { mu.Lock(); owner["ch"] = to; mu.Unlock() }
	nodes := map[string]*fakeShardListener{}
	for _, addr := range []string{"a", "b", "c"} {
		nodes[addr] = &fakeShardListener{fakeListener: &fakeListener{channels: map[string]bool{}}, addr: addr, owners: owners, shards: map[string]bool{}}
	}
	var listed sync.Map // addr → bool
	for addr := range nodes {
		listed.Store(addr, true)
	}
	list := func(context.Context) (map[string]ListenFunc, error) {
		out := map[string]ListenFunc{}
		for addr, f := range nodes {
			if _, ok := listed.Load(addr); ok {
				out[addr] = func(context.Context, func(string, string)) (driver.Listener, error) { return f, nil }
			}
		}
		return out, nil
	}
	l, err := ListenEach(ctx, list, func(_ context.Context, ch string) (string, error) { return owners(ch), nil }, func(string, string) {})
	if err != nil {
		t.Fatal(err)
	}
	sl := l.(driver.ShardListener)
	held := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var on []string
			for addr, f := range nodes {
				if f.holds("ch") {
					on = append(on, addr)
				}
			}
			if slices.Equal(on, []string{want}) || want == "" && len(on) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the sharded channel is held on %v, want %q alone", on, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	if err := sl.SSubscribe(ctx, "ch"); err != nil {
		t.Fatal(err)
	}
	held("a")
	move("b") // the slot moved: a drops it
	nodes["a"].drop("ch")
	held("b")
	move("c") // b fails over to c, and leaves the cluster
	listed.Delete("b")
	if err := l.Subscribe(ctx, "k"); err != nil { // a subscription lists the nodes again
		t.Fatal(err)
	}
	held("c")
	if err := sl.SUnsubscribe(ctx, "ch"); err != nil {
		t.Fatal(err)
	}
	held("")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
}
