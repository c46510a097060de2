// Package keycheck wraps a script in a check that fails it when it
// would run a command on a key that is not among its KEYS. A Redis
// Cluster runs a script where its declared keys are, so an undeclared key
// that a slot migration moved away fails the script half done; ACL key
// patterns and Functions check the declared keys too. The conformance
// suite runs every script so wrapped, and `redlock slowlog` names the
// wrapped scripts' calls; production code never uses it.
package keycheck

import "fmt"

// Code starts the error reply of a script that the check stopped, and
// names the servers' count of them (INFO errorstats).
const Code = "UNDECLARED"

// Wrap returns src, the script called name, behind the check, whose
// error replies start with Code.
func Wrap(name, src string) string { return Prelude(Code, name) + src }

// Prelude is the check that goes before a script: it shadows redis.call
// and redis.pcall with ones that fail the script, with an error reply
// starting with code that the server counts (INFO errorstats) and logs,
// before they run a command on an undeclared key. The commands the
// scripts use take their key first, except DEL, UNLINK, EXISTS, MGET and
// TOUCH (all keys), TIME (none) and PUBLISH and SPUBLISH (a channel).
func Prelude(code, script string) string { return fmt.Sprintf(prelude, code, script) }

const prelude = `local redis = (function(server, code, script)
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
