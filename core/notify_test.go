package core

import (
	"errors"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/drivers/goredis"
)

func TestMergeFlags(t *testing.T) {
	for _, c := range []struct {
		current, want string
		changed       bool
	}{
		{"", "Kgx", true},
		{"Ex", "ExKg", true},
		{"xgK", "xgK", false},
		{"KEA", "KEA", false}, // A implies g and x
		{"AE", "AEK", true},
		{"Kx", "Kxg", true},
		{"Em", "EmKgx", true}, // m (key miss) is not implied by anything
	} {
		got, changed := mergeFlags(c.current, notifyFlags)
		if got != c.want || changed != c.changed {
			t.Errorf("mergeFlags(%q) = %q, %v; want %q, %v", c.current, got, changed, c.want, c.changed)
		}
	}
}

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
	_, err = New([]Driver{d})
	if !errors.Is(err, ErrNotifyUnsupported) {
		t.Fatalf("New over miniredis: got %v, want ErrNotifyUnsupported", err)
	}
	for _, want := range []string{"does not support keyspace notifications", "Poll"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not mention %q", err, want)
		}
	}
	c, err := New([]Driver{d}, WithWaitStrategy(Poll))
	if err != nil {
		t.Fatalf("New with Poll over miniredis: %v", err)
	}
	c.Close()
}
