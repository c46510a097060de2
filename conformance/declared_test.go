package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/scripts/lua/keycheck"
)

// TestUndeclaredPrelude shows that the check the suite puts before every
// script fails a script on its first command on a key outside its KEYS,
// before that command runs, and lets through the declared keys, DEL of
// several declared keys, TIME and PUBLISH.
func TestUndeclaredPrelude(t *testing.T) {
	for _, s := range testenv.Servers(t) {
		t.Run(s.Name, func(t *testing.T) {
			ctx := context.Background()
			r := redis.NewClient(&redis.Options{Addr: s.Nodes[0]})
			defer r.Close()
			// A code of its own: the suites that run beside this test count
			// keycheck.Code.
			prelude := keycheck.Prelude("UNDECLAREDPROBE", "probe")
			k1, k2, other := "redlock:{prelude}", "redlock:{prelude}:b", "redlock:{prelude}:other"
			defer r.Del(ctx, k1, k2, other)
			ok := prelude + `
redis.call('set', KEYS[1], 'a', 'PX', 10000)
redis.call('set', KEYS[2], 'b', 'PX', 10000)
redis.call('time')
redis.call('publish', 'redlock:{prelude}:channel', 'x')
return redis.call('del', KEYS[1], KEYS[2])`
			if n, err := r.Eval(ctx, ok, []string{k1, k2}).Int(); err != nil || n != 2 {
				t.Fatalf("a script on its declared keys: %d, %v; want 2, nil", n, err)
			}
			for _, body := range []string{
				`redis.call('set', KEYS[1], 'a', 'PX', 10000) return redis.call('set', ARGV[1], 'x', 'PX', 10000)`,
				`redis.call('set', KEYS[1], 'a', 'PX', 10000) return redis.pcall('get', ARGV[1])`,
				`redis.call('set', KEYS[1], 'a', 'PX', 10000) return redis.call('del', KEYS[1], ARGV[1])`,
			} {
				err := r.Eval(ctx, prelude+body, []string{k1}, other).Err()
				if err == nil || !strings.Contains(err.Error(), "UNDECLAREDPROBE probe.lua ran ") || !strings.Contains(err.Error(), other) ||
					s.Name != "miniredis" && !strings.HasPrefix(err.Error(), "UNDECLAREDPROBE ") {
					t.Errorf("%s: %v, want an UNDECLARED error naming %s", body, err, other)
				}
				if n, _ := r.Exists(ctx, other).Result(); n != 0 {
					t.Errorf("%s: the undeclared key was written", body)
				}
			}
		})
	}
}
