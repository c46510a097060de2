-- Lengthens a read lease's expiry while it is live. It never shortens it,
-- so that an extension that lands late (its reply timed out, a longer one
-- followed) cannot cut the lease short.
-- KEYS[1] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- ARGV[1] token: the read lease's token
-- ARGV[2] ttl: the time to live in milliseconds it needs at least
-- Returns: 1 when the lease holds here; 0 when it lapsed or was released.

-- #include lib/now.lua
-- #include lib/lengthen.lua

local now = serverNow()
local lapse = redis.call('zscore', KEYS[1], ARGV[1])
if not lapse or tonumber(lapse) <= now then
  return 0
end
local ttl = tonumber(ARGV[2])
if tonumber(lapse) < now + ttl then
  redis.call('zadd', KEYS[1], now + ttl, ARGV[1])
end
lengthen(KEYS[1], ttl)
return 1
