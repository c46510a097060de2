-- Reads how long a read lease still holds; it writes nothing.
-- KEYS[1] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- ARGV[1] token: the read lease's token
-- Returns: the milliseconds until the lease lapses, or the key expires if
-- sooner; 0 when it lapsed or was released.

-- #include lib/now.lua
-- #include lib/key_left.lua

local lapse = redis.pcall('zscore', KEYS[1], ARGV[1])
if type(lapse) ~= 'string' then
  return 0
end
return math.max(keyLeft(KEYS[1], tonumber(lapse) - serverNow()), 0)
