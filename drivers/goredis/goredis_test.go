package goredis_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/drivers/goredis"
)

// A client that ignores context deadlines would let one slow node hold up
// an attempt past the node timeout, so New refuses it and says what to set.
func TestNewRefusesClientIgnoringDeadlines(t *testing.T) {
	clients := map[string]redis.UniversalClient{
		"Client":        redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}),
		"ClusterClient": redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}}),
		"Ring":          redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}}),
	}
	for name, c := range clients {
		t.Cleanup(func() { c.Close() })
		_, err := goredis.New(c)
		if !errors.Is(err, driver.ErrInvalid) || !strings.Contains(err.Error(), "ContextTimeoutEnabled: true") {
			t.Errorf("New(%s without ContextTimeoutEnabled): got %v, want ErrInvalid naming ContextTimeoutEnabled", name, err)
		}
	}
}
