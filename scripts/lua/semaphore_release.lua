-- Gives a semaphore lease's permits back and, when that or the purge of
-- expired permits freed any, deletes the signal key so that its keyspace
-- event wakes the waiters.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] signal: the key refused acquisitions set
-- ARGV[1] token: the lease's token
-- ARGV[2] n: how many permits the lease holds
-- Returns: 1 when all n permits were still held (and are now free); 0 when
-- they had expired or were released before.
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expired = redis.call('zrangebyscore', KEYS[1], '-inf', now)
for _, s in ipairs(expired) do
  redis.call('hdel', KEYS[2], s, 't:' .. (redis.call('hget', KEYS[2], s) or ''))
end
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
local held = 0
local list = redis.call('hget', KEYS[2], 't:' .. ARGV[1])
if list then
  for s in string.gmatch(list, '%d+') do
    if redis.call('hget', KEYS[2], s) == ARGV[1] then
      redis.call('zrem', KEYS[1], s)
      redis.call('hdel', KEYS[2], s)
      held = held + 1
    end
  end
  redis.call('hdel', KEYS[2], 't:' .. ARGV[1])
end
if #expired + held > 0 then
  redis.call('del', KEYS[3])
end
if held == tonumber(ARGV[2]) then
  return 1
end
return 0
