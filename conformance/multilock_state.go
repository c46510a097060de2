package conformance

import (
	"testing"
	"time"
)

// testMultiLockState reads MultiLock.State while a MultiLock lease holds
// two names: each name, in sorted order, is held by the lease's ID with
// its fencing token on every node; after Unlock, both are free. A name
// that only a Mutex holds reads as that Mutex's.
func testMultiLockState(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	c := e.client(t)
	ml := c.MultiLock([]string{n + "/b", n + "/a"})
	l := mustLock(t, ctx, ml.Lock)
	other := mustLock(t, ctx, c.Mutex(n+"/c").Lock)
	states, err := ml.State(ctx)
	if err != nil {
		t.Fatalf("State while held: %v", err)
	}
	if len(states) != 2 || states[0].Name != n+"/a" || states[1].Name != n+"/b" {
		t.Fatalf("State while held: %+v, want the names %s/a and %s/b in order", states, n, n)
	}
	for _, s := range states {
		if !s.Locked || s.Holder != l.ID() || s.Token != l.Token() || s.Nodes < len(e.addrs)/2+1 {
			t.Fatalf("State of %s while the MultiLock holds it: %+v, want held by %q with token %d on %d nodes", s.Name, s, l.ID(), l.Token(), len(e.addrs))
		}
	}
	if s, err := c.MultiLock([]string{n + "/c"}).State(ctx); err != nil || len(s) != 1 || s[0].Holder != other.ID() {
		t.Fatalf("MultiLock.State of a name a Mutex holds: %+v, %v; want held by %q", s, err, other.ID())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	states, err = ml.State(ctx)
	if err != nil {
		t.Fatalf("State after Unlock: %v", err)
	}
	for _, s := range states {
		if s.Locked || s.Holder != "" {
			t.Fatalf("State of %s after Unlock: %+v, want free", s.Name, s)
		}
	}
}
