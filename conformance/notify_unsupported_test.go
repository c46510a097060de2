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
// and succeeds; Ping, and a Lock that must wait, fail with
// ErrNotifyUnsupported, which says to use Poll; a TryLock does not wait
// and works.
func TestNotifyUnsupportedServer(t *testing.T) {
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	d, err := goredis.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.New([]core.Driver{d})
	if err != nil {
		t.Fatalf("New over miniredis: %v; it sends nothing", err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	held, err := c.Mutex("n").TryLock(ctx)
	if err != nil {
		t.Fatalf("TryLock, which does not wait: %v", err)
	}
	defer held.Unlock(ctx)
	for what, call := range map[string]func() error{
		"Ping": func() error { return c.Ping(ctx) },
		"Lock": func() error { _, err := c.Mutex("n").Lock(ctx); return err },
	} {
		err := call()
		if !errors.Is(err, core.ErrNotifyUnsupported) {
			t.Fatalf("%s over miniredis: got %v, want ErrNotifyUnsupported", what, err)
		}
		for _, want := range []string{"does not support keyspace notifications", "Poll"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: the error %q does not mention %q", what, err, want)
			}
		}
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
