-- Resets the expiry of a semaphore lease's permits while all of them are
-- still held (expired permits are purged first, so a lease that expired
-- stays lost).
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- ARGV[1] token: the lease's token
-- ARGV[2] n: how many permits the lease holds
-- ARGV[3] ttl: the new time to live in milliseconds
-- Returns: 1 when extended; 0 when any of the permits is no longer held.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, s in ipairs(redis.call('zrangebyscore', KEYS[1], '-inf', now)) do
  redis.call('hdel', KEYS[2], s, 't:' .. (redis.call('hget', KEYS[2], s) or ''))
end
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
local list = redis.call('hget', KEYS[2], 't:' .. ARGV[1])
if not list then
  return 0
end
local slots = {}
for s in string.gmatch(list, '%d+') do
  if redis.call('hget', KEYS[2], s) ~= ARGV[1] then
    return 0
  end
  slots[#slots + 1] = s
end
if #slots ~= tonumber(ARGV[2]) then
  return 0
end
local ttl = tonumber(ARGV[3])
for _, s in ipairs(slots) do
  redis.call('zadd', KEYS[1], 'XX', now + ttl, s)
end
for _, k in ipairs({KEYS[1], KEYS[2]}) do
  if redis.call('pttl', k) < ttl then
    redis.call('pexpire', k, ttl)
  end
end
return 1
