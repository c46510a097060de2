package conformance

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/driver/adapter"
	"github.com/redlockgo/redlock/scripts/lua/keycheck"
)

var checkDeclaredOnce sync.Once

// checkDeclaredKeys puts the key check (package keycheck) before every script for the
// rest of the process. The drivers read adapter's script variables at
// each call, so they run the changed scripts (by EVAL on the first
// NOSCRIPT, then EVALSHA): production code pays nothing.
func checkDeclaredKeys() {
	checkDeclaredOnce.Do(func() {
		for _, s := range adapter.Scripts {
			src := keycheck.Wrap(s.Name, s.Source)
			sum := sha1.Sum([]byte(src))
			*s = adapter.Script{Name: s.Name, SHA1: hex.EncodeToString(sum[:]), Source: src}
		}
	})
}

// undeclaredCount sums the UNDECLARED script errors that the servers have
// counted; servers that keep no error statistics (miniredis) count 0.
func undeclaredCount(t testing.TB, servers []testenv.Server) int {
	total := 0
	for _, s := range servers {
		for _, addr := range append(append([]string(nil), s.Nodes...), s.Cluster...) {
			r := redis.NewClient(&redis.Options{Addr: addr})
			info, err := r.Info(context.Background(), "errorstats").Result()
			r.Close()
			if err != nil {
				continue
			}
			for _, line := range strings.Split(info, "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+keycheck.Code+":count="); ok {
					n, _ := strconv.Atoi(v)
					total += n
				}
			}
		}
	}
	return total
}
