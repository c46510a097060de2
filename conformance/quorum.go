package conformance

import (
	"errors"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/internal/testenv"
)

// withDown returns the cell's addresses with the last n behind proxies,
// and a function that takes those n down.
func (e env) withDown(t testing.TB, n int) (addrs []string, down func()) {
	addrs = append([]string(nil), e.addrs...)
	var downs []func()
	for i := len(addrs) - n; i < len(addrs); i++ {
		var d func()
		addrs[i], d = testenv.Proxy(t, addrs[i], 0)
		downs = append(downs, d)
	}
	return addrs, func() {
		for _, d := range downs {
			d()
		}
	}
}

// runQuorum runs the cases that need three nodes, some of them down.
func runQuorum(t *testing.T, e env) {
	t.Run("MinorityDown", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		addrs, down := e.withDown(t, 1)
		c := e.clientOn(t, addrs)
		down()
		l, err := c.Mutex(n).Lock(ctx)
		if err != nil {
			t.Fatalf("Lock with one of three nodes down: %v", err)
		}
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend with one of three nodes down: %v", err)
		}
		if err := l.Unlock(ctx); err != nil {
			t.Fatalf("Unlock with one of three nodes down: %v", err)
		}
	})
	t.Run("MajorityDown", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		addrs, down := e.withDown(t, 2)
		c := e.clientOn(t, addrs)
		down()
		start := time.Now()
		if _, err := c.Mutex(n).Lock(ctx); !errors.Is(err, core.ErrNoQuorum) {
			t.Fatalf("Lock with two of three nodes down: got %v, want ErrNoQuorum", err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Lock with a majority down took %v; it should fail fast", took)
		}
		if n, _ := e.admin(t, 0).Exists(ctx, lockKey(n)).Result(); n != 0 {
			t.Fatal("the failed attempt left its key on the node that granted it")
		}
	})
	t.Run("FailedAttemptCleansUp", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		for _, i := range []int{1, 2} {
			e.admin(t, i).Set(ctx, lockKey(n), "someone-else", 10*time.Second)
		}
		if _, err := e.client(t).Mutex(n).TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
			t.Fatalf("TryLock held on two of three nodes: got %v, want ErrNotAcquired", err)
		}
		if n, _ := e.admin(t, 0).Exists(ctx, lockKey(n)).Result(); n != 0 {
			t.Fatal("the failed attempt left its key on the node that granted it")
		}
		for _, i := range []int{1, 2} {
			if v, _ := e.admin(t, i).Get(ctx, lockKey(n)).Result(); v != "someone-else" {
				t.Fatalf("node %d: the failed attempt touched the holder's key (now %q)", i, v)
			}
		}
	})
	t.Run("DeletedOnMajority", func(t *testing.T) {
		ctx, n := ctxFor(t, 10*time.Second), name(t)
		l, err := e.client(t).Mutex(n).Lock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		e.admin(t, 0).Del(ctx, lockKey(n))
		if err := l.Extend(ctx, 5*time.Second); err != nil {
			t.Fatalf("Extend with the key deleted on one of three nodes: %v", err)
		}
		e.admin(t, 1).Del(ctx, lockKey(n))
		if err := l.Extend(ctx, 5*time.Second); !errors.Is(err, core.ErrLost) {
			t.Fatalf("Extend with the key deleted on two of three nodes: got %v, want ErrLost", err)
		}
		select {
		case <-l.Done():
		default:
			t.Fatal("Done is open after the lease was found lost")
		}
		if err := l.Unlock(ctx); !errors.Is(err, core.ErrLost) {
			t.Fatalf("Unlock of a lost lease: got %v, want ErrLost", err)
		}
	})
}
