-- Acquires every name of a MultiLock at once, or none, where one script
-- may touch all their keys (one server, not a Redis Cluster). Each name is
-- a plain lock as in mutex_acquire.lua. At the first name held by another
-- token it takes nothing and queues the waiter there. Granted every name,
-- it raises every name's fencing counter to the highest of them, so the
-- lease's fencing token exceeds every earlier token of every name.
-- KEYS[1..] keys: for each name in order, its lock, fence, queue and ticket keys (mutex_acquire.lua's KEYS[1] to KEYS[4])
-- ARGV[1] token: the new holder's token, the same for every attempt of a waiter
-- ARGV[2] ttl: time to live in milliseconds
-- ARGV[3] join: 1 to join the queue of the name held by another on failure, 0 not to
-- ARGV[4] arrival: the waiter's place in that queue (µs since the epoch)
-- Returns: {1, fence, 0, 0, 0} when acquired (fence: every name's fencing
-- counter now); {0, 0, wait, first, at} when not: at is the index (from 0)
-- of the first name held by another token, and wait and first are as in
-- mutex_acquire.lua for that name.

-- #include lib/join.lua

local token, ttl = ARGV[1], tonumber(ARGV[2])
for i = 1, #KEYS, 4 do
  local kind = redis.call('type', KEYS[i]).ok
  if kind ~= 'none' and not (kind == 'string' and redis.call('get', KEYS[i]) == token) then
    local wait = redis.call('pttl', KEYS[i])
    local first = 0
    if ARGV[3] == '1' then
      first = join(KEYS[i + 2], KEYS[i + 3], ARGV[4], 'g:' .. ARGV[2] .. ':' .. token, wait, ttl)
    end
    return {0, 0, wait, first, (i - 1) / 4}
  end
end
local fence = 0
for i = 1, #KEYS, 4 do
  local granted = redis.call('get', KEYS[i])
  redis.call('set', KEYS[i], token, 'PX', ttl)
  redis.call('zrem', KEYS[i + 2], KEYS[i + 3])
  if granted then
    fence = math.max(fence, tonumber(redis.call('get', KEYS[i + 1])))
  else
    fence = math.max(fence, redis.call('incr', KEYS[i + 1]))
  end
end
for i = 2, #KEYS, 4 do
  if tonumber(redis.call('get', KEYS[i])) < fence then
    redis.call('set', KEYS[i], fence)
  end
end
return {1, fence, 0, 0, 0}
