package conformance_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// TestNotifyUnsupportedServer runs a Notify Client against miniredis,
// which has neither keyspace notifications nor CONFIG: New sends nothing
// and succeeds; Ping fails with ErrNotifyUnsupported, which says to use
// Poll; locks still work: a TryLock, and a Lock that waits for the
// holder's release.
func TestNotifyUnsupportedServer(t *testing.T) {
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	d, err := goredis.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.New([]core.Driver{d}, core.WithTTL(2*time.Second))
	if err != nil {
		t.Fatalf("New over miniredis: %v; it sends nothing", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = c.Ping(ctx)
	if !errors.Is(err, core.ErrNotifyUnsupported) {
		t.Fatalf("Ping over miniredis: got %v, want ErrNotifyUnsupported", err)
	}
	for _, want := range []string{"does not support keyspace notifications", "Poll"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Ping: the error %q does not mention %q", err, want)
		}
	}
	held, err := c.Mutex("n").TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := c.Mutex("n").Lock(ctx)
		if err == nil {
			err = l.Unlock(ctx)
		}
		got <- err
	}()
	time.Sleep(100 * time.Millisecond) // the waiter waits
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("Lock after the holder's release, over miniredis: %v", err)
	}
	p, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
	if err != nil {
		t.Fatalf("New with Poll over miniredis: %v", err)
	}
	defer p.Close()
	if err := p.Ping(ctx); err != nil {
		t.Fatalf("Ping with Poll over miniredis: %v", err)
	}
}
