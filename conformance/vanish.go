package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// vanishKinds are the leases whose Done hears, under Notify, that another
// client removed their key: by case, their kind in leaseCheckKinds and
// how the key is removed (DEL, or PEXPIRE to 100ms).
var vanishKinds = map[string]map[string]struct {
	kind    string
	pexpire bool
}{
	"Mutex": {
		"DoneHearsKeyDeleted": {"LeaseCheck", false},
		"DoneHearsKeyExpired": {"LeaseCheck", true},
	},
	"FairMutex": {
		"DoneHearsKeyDeleted": {"LeaseCheck", false},
		"DoneHearsKeyExpired": {"LeaseCheck", true},
	},
	"RWMutex":   {"DoneHearsKeyDeletedWriter": {"LeaseCheckWriter", false}},
	"MultiLock": {"DoneHearsKeyDeleted": {"LeaseCheck", false}},
}

// vanishCases are primitive's cases of a lease whose key another client
// removes: under Notify, heard by keyspace events; under Poll, by the
// watchdog (one primitive suffices: the watchdog is the lease's).
func vanishCases(e env, primitive string) map[string]func(*testing.T, env) {
	cases := map[string]func(*testing.T, env){}
	if e.strategy == core.Poll {
		if primitive == "Mutex" {
			cases["AutoExtendHearsKeyDeleted"] = testAutoExtendHearsKeyDeleted
		}
		return cases
	}
	for name, v := range vanishKinds[primitive] {
		k := leaseCheckKinds[primitive][v.kind]
		cases[name] = func(t *testing.T, e env) { testDoneHearsVanish(t, e, k.lock, k.key, v.pexpire) }
	}
	if primitive == "Mutex" {
		cases["DoneHearsOwnExtendUnlock"] = testDoneHearsOwnExtendUnlock
	}
	return cases
}

// holdingNodes are the nodes that hold key: a round decided by a majority
// may leave the others out.
func (e env) holdingNodes(t *testing.T, ctx context.Context, key string) []int {
	t.Helper()
	var holding []int
	for i := range e.addrs {
		if v, err := e.admin(t, i).Exists(ctx, key).Result(); err != nil {
			t.Fatal(err)
		} else if v == 1 {
			holding = append(holding, i)
		}
	}
	return holding
}

// listening waits, up to 2s, until key's keyspace channel is subscribed on
// every node, after the lease's Done was first read. It goes on without:
// the case then fails on Done.
func (e env) listening(t *testing.T, ctx context.Context, key string) {
	t.Helper()
	ch := keyspaceChannel("0", key)
	deadline := time.Now().Add(2 * time.Second)
	for i := range e.addrs {
		for time.Now().Before(deadline) {
			if ok, err := subscribed(ctx, e.admin(t, i), ch); err != nil {
				t.Fatalf("PUBSUB NUMSUB on node %d: %v", i, err)
			} else if ok {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// testDoneHearsVanish holds a lease with a 30s TTL whose Done is read, and
// removes its key behind the library's back: on a minority of the nodes
// that hold it, the lease stays; on a majority, Done closes within a
// second and Err is ErrLost.
func testDoneHearsVanish(t *testing.T, e env, lock func(c *core.Client, n string) func(context.Context) (*core.Lease, error), key func(string) string, pexpire bool) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	c := e.client(t, core.WithTTL(30*time.Second))
	l := mustLock(t, ctx, lock(c, n))
	done := l.Done()
	e.listening(t, ctx, key(n))
	remove := func(nodes []int) {
		t.Helper()
		for _, i := range nodes {
			admin := e.admin(t, i)
			err := admin.Del(ctx, key(n)).Err()
			if pexpire {
				err = admin.PExpire(ctx, key(n), 100*time.Millisecond).Err()
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	quorum := len(e.addrs)/2 + 1
	holding := e.holdingNodes(t, ctx, key(n))
	if minority := min(len(e.addrs)-quorum, len(holding)-quorum); minority > 0 {
		remove(holding[:minority])
		holding = holding[minority:]
		time.Sleep(300 * time.Millisecond) // past the 100ms, and the check it makes
		if err := l.Err(); err != nil {
			t.Fatalf("Err after its key was removed on a minority: %v, want nil", err)
		}
	}
	remove(holding[:len(holding)-quorum+1])
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatalf("Done still open a second after the lease's key was removed on a majority (Err %v); the lease claims %v more", l.Err(), time.Until(l.Until()).Round(time.Second))
	}
	if err := l.Err(); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Err after Done closed: %v, want ErrLost", err)
	}
}

// testDoneHearsOwnExtendUnlock runs Extend and Unlock cycles of leases
// whose Done is read: their own events end no lease, and Unlock finds
// each held.
func testDoneHearsOwnExtendUnlock(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	m := e.client(t, core.WithTTL(30*time.Second)).Mutex(n)
	for range 3 {
		l := mustLock(t, ctx, m.Lock)
		l.Done()
		e.listening(t, ctx, lockKey(n))
		for range 2 {
			if err := l.Extend(ctx, 20*time.Second); err != nil {
				t.Fatalf("Extend: %v", err)
			}
			time.Sleep(100 * time.Millisecond) // the events of the Extend arrive
			if err := l.Err(); err != nil {
				t.Fatalf("Err after the lease's own Extend: %v, want nil", err)
			}
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock: %v, want nil", err)
		}
		if err := l.Err(); !errors.Is(err, core.ErrNotHeld) {
			t.Fatalf("Err after Unlock: %v, want ErrNotHeld", err)
		}
	}
}

// testAutoExtendHearsKeyDeleted deletes, on every node, the key of a lease
// that the watchdog extends every second (a 3s TTL): Done closes within
// 1.5s, at the watchdog's next extension.
func testAutoExtendHearsKeyDeleted(t *testing.T, e env) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	l := mustLock(t, ctx, e.client(t, core.WithTTL(3*time.Second), core.WithAutoExtend()).Mutex(n).Lock)
	for i := range e.addrs {
		if err := e.admin(t, i).Del(ctx, lockKey(n)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-l.Done():
	case <-time.After(1500 * time.Millisecond):
		t.Fatalf("Done still open 1.5s after the lease's key was deleted on every node (Err %v)", l.Err())
	}
	if err := l.Err(); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Err after Done closed: %v, want ErrLost", err)
	}
}
