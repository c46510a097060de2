-- Takes a plain Mutex's lock from the holder that ForceLock read on this
-- node (an operator's force-acquire): a compare-and-swap, so that a copy
-- or retry of the request, landing once another holds the name, takes
-- nothing. The former holder's token goes into the forced marker, as a
-- force-release does (see mutex_force.lua); the line is left as it is.
-- A lock that holds the request's own token is its retry's: it answers
-- the counter and writes nothing, never shortening the lease. An owner's
-- hash, a reservation or another holder is not what was read: nothing is
-- written. The fencing token is drawn before any write.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] forced: the lock's forced marker
-- ARGV[1] token: the new holder's token
-- ARGV[2] holder: the token ForceLock read holding the lock; '' for a free lock
-- ARGV[3] ttl: the lease's time to live, in ms
-- ARGV[4] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- Returns: the fencing token drawn, or the counter when the lock holds
-- token already (see currentFence in lib/fence.lua); 0 when the lock
-- holds other than holder; or BADFENCE (see lib/fence.lua) or BADFORCED
-- (see lib/forced.lua), writing nothing.

-- #include lib/fence.lua
-- #include lib/forced.lua

local bad = badForced(KEYS[3])
if bad then
  return bad
end
local kind = redis.call('type', KEYS[1]).ok
local current = ''
if kind == 'string' then
  current = redis.call('get', KEYS[1])
elseif kind ~= 'none' then
  return 0
end
if current == ARGV[1] then
  local fence, bad = currentFence(KEYS[2])
  return bad or fence
end
if current ~= ARGV[2] then
  return 0
end
local fence
fence, bad = drawFence(KEYS[2], ARGV[4])
if bad then
  return bad
end
if current ~= '' then
  markForced(KEYS[3], current, redis.call('pttl', KEYS[1]))
end
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[3])
return fence
