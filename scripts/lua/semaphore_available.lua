-- Counts the free permits of a semaphore, purging expired ones.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] size: the number of permits stored by SetPermits; absent until then
-- ARGV[1] defaultSize: the number of permits while none is stored
-- Returns: the free permits, 0 when more are held than exist (after
-- SetPermits lowered the number).
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, s in ipairs(redis.call('zrangebyscore', KEYS[1], '-inf', now)) do
  redis.call('hdel', KEYS[2], s, 't:' .. (redis.call('hget', KEYS[2], s) or ''))
end
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
local size = tonumber(redis.call('get', KEYS[3]) or ARGV[1])
return math.max(size - redis.call('zcard', KEYS[1]), 0)
