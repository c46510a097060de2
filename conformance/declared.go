package conformance

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/driver/adapter"
)

// undeclaredPrelude goes before every script while the suite runs. It
// shadows redis.call and redis.pcall with ones that fail the script, with
// an error reply starting UNDECLARED that the server counts (INFO
// errorstats) and logs, when it would run a command on a key that is not
// among its KEYS: a Redis Cluster runs a script where its declared keys
// are, so an undeclared key that a slot migration moved away fails the
// script half done, and ACL key patterns and Functions check the declared
// keys too. The commands the scripts use take their key first, except
// DEL, UNLINK and EXISTS (all keys), TIME (none) and PUBLISH and
// SPUBLISH (a channel). Its two %q are the error's code (undeclaredCode)
// and the script's name.
const undeclaredPrelude = `local redis = (function(server, code, script)
  local declared = {}
  for _, k in ipairs(KEYS) do
    declared[k] = true
  end
  local every = {del = true, unlink = true, exists = true, mget = true, touch = true}
  local none = {time = true, publish = true, spublish = true}
  local function check(command, ...)
    local c = string.lower(command)
    if none[c] then
      return
    end
    local n = select('#', ...)
    if not every[c] then
      n = math.min(n, 1)
    end
    for i = 1, n do
      local key = select(i, ...)
      if not declared[key] then
        local msg = code .. ' ' .. script .. '.lua ran ' .. c .. ' on ' .. tostring(key) .. ', which is not in its KEYS'
        if server.log then
          server.log(server.LOG_WARNING, msg)
        end
        if server.REDIS_VERSION then
          error({err = msg}) -- the reply is msg, counted by its code
        end
        error(msg) -- miniredis, which takes no table
      end
    end
  end
  return setmetatable({
    call = function(command, ...) check(command, ...) return server.call(command, ...) end,
    pcall = function(command, ...) check(command, ...) return server.pcall(command, ...) end,
  }, {__index = server})
end)(redis, %q, %q)
`

// undeclaredCode starts the error reply of a script that the check
// stopped, and names the servers' count of them (INFO errorstats).
const undeclaredCode = "UNDECLARED"

var checkDeclaredOnce sync.Once

// checkDeclaredKeys puts undeclaredPrelude before every script for the
// rest of the process. The drivers read adapter's script variables at
// each call, so they run the changed scripts (by EVAL on the first
// NOSCRIPT, then EVALSHA): production code pays nothing.
func checkDeclaredKeys() {
	checkDeclaredOnce.Do(func() {
		for _, s := range adapter.Scripts {
			src := fmt.Sprintf(undeclaredPrelude, undeclaredCode, s.Name) + s.Source
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
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "errorstat_"+undeclaredCode+":count="); ok {
					n, _ := strconv.Atoi(v)
					total += n
				}
			}
		}
	}
	return total
}
