-- Takes a waiter that gives up out of the queue. When the lock was
-- reserved for it, the reservation passes to the next waiter.
-- KEYS[1] lock: the lock key
-- KEYS[2] queue: sorted set of waiting tickets, by arrival
-- KEYS[3] ticket: the leaving waiter's ticket key
-- ARGV[1] reserve: how long the next waiter has the lock to itself, in ms
-- Returns: 1 when the reservation passed on or lapsed, 0 otherwise.
redis.call('zrem', KEYS[2], KEYS[3])
redis.call('del', KEYS[3])
if redis.call('type', KEYS[1]).ok ~= 'string' or redis.call('get', KEYS[1]) ~= 'reserved:' .. KEYS[3] then
  return 0
end
local reserve = ARGV[1]
local woke = false
while true do
  local head = redis.call('zpopmin', KEYS[2])
  if #head == 0 then
    break
  end
  if redis.call('del', head[1]) == 1 then
    redis.call('set', KEYS[1], 'reserved:' .. head[1], 'PX', reserve)
    woke = true
    break
  end
end
if not woke then
  redis.call('del', KEYS[1])
end
return 1
