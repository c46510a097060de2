-- Reads how long a lease of a reentrant lock still holds it (see
-- lib/owned.lua); it writes nothing.
-- KEYS[1] lock: the lock key, the owner's hash
-- ARGV[1] lease: the lease's random token
-- Returns: the milliseconds until the lease's hold ends, or the key
-- expires if sooner; 0 when it does not hold the lock.

-- #include lib/now.lua
-- #include lib/key_left.lua

local ends = redis.pcall('hget', KEYS[1], 'l:' .. ARGV[1])
if type(ends) ~= 'string' then
  return 0
end
return math.max(keyLeft(KEYS[1], (tonumber(ends) or 0) - serverNow()), 0)
