package conformance_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// TestNotifyUnsupportedServer runs New against miniredis, which has
// neither keyspace notifications nor CONFIG.
func TestNotifyUnsupportedServer(t *testing.T) {
	srv := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	d, err := goredis.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	_, err = core.New([]core.Driver{d})
	if !errors.Is(err, core.ErrNotifyUnsupported) {
		t.Fatalf("New over miniredis: got %v, want ErrNotifyUnsupported", err)
	}
	for _, want := range []string{"does not support keyspace notifications", "Poll"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not mention %q", err, want)
		}
	}
	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll))
	if err != nil {
		t.Fatalf("New with Poll over miniredis: %v", err)
	}
	c.Close()
}
