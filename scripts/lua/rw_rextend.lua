-- Resets a read lease's expiry while it is live.
-- KEYS[1] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- ARGV[1] token: the read lease's token
-- ARGV[2] ttl: the new time to live in milliseconds
-- Returns: 1 when extended; 0 when the lease lapsed or was released.
local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local lapse = redis.call('zscore', KEYS[1], ARGV[1])
if not lapse or tonumber(lapse) <= now then
  return 0
end
local ttl = tonumber(ARGV[2])
redis.call('zadd', KEYS[1], now + ttl, ARGV[1])
if redis.call('pttl', KEYS[1]) < ttl then
  redis.call('pexpire', KEYS[1], ttl)
end
return 1
