-- Takes a plain Mutex's lock whoever holds it (an operator's ForceLock):
-- the former holder's token goes into the forced marker, as a
-- force-release does (see mutex_force.lua), an owner's hash or a
-- reservation is replaced, and the waiters' line is left as it is. The
-- request marks its own ticket as it lands, and a copy of it that finds
-- the mark is refused: a client's retry landing after the lease's release
-- would otherwise take the name from a later holder. The fencing token is
-- drawn before any write, so that a malformed counter leaves everything
-- as it was.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] forced: the lock's forced marker
-- KEYS[4] ticket: the request's own ticket (see lib/left.lua); extensions keep its mark as long as the lease
-- ARGV[1] token: the new holder's token
-- ARGV[2] ttl: the lease's time to live, in ms
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- Returns: the fencing token drawn; 0 for a copy of a request that
-- landed before; or BADFENCE (see lib/fence.lua) or BADFORCED (see
-- lib/forced.lua), writing nothing.

-- #include lib/value.lua
-- #include lib/left.lua
-- #include lib/fence.lua
-- #include lib/forced.lua

local bad = badForced(KEYS[3])
if bad then
  return bad
end
if hasLeft(KEYS[4]) then
  return 0
end
local fence
fence, bad = drawFence(KEYS[2], ARGV[3])
if bad then
  return bad
end
markLeft(KEYS[4], ARGV[2])
local kind = redis.call('type', KEYS[1]).ok
if kind == 'string' then
  local holder = redis.call('get', KEYS[1])
  local left = redis.call('pttl', KEYS[1])
  if holder ~= ARGV[1] and string.find(holder, 'reserved:', 1, true) ~= 1 and left > 0 then
    markForced(KEYS[3], holder, left)
  end
end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
return fence
