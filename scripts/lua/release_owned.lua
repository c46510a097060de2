-- Releases one hold of a reentrant lock; the last hold frees the lock and
-- wakes the oldest waiter as release_wake.lua does.
-- KEYS[1] lock: the lock key, a hash from the owner to its hold count
-- KEYS[2] queue: sorted set of waiting tickets, by arrival
-- ARGV[1] owner: the owner identity
-- ARGV[2] reserve: how long the woken waiter has the lock to itself, in ms
-- Returns: the owner's holds left (0: the lock is free); -1 when the owner
-- holds nothing here.
if redis.call('type', KEYS[1]).ok ~= 'hash' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left > 0 then
  return left
end
local reserve = ARGV[2]
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
return 0
