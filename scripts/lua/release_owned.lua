-- Releases one hold of a reentrant lock; the last hold deletes the key and
-- wakes the oldest waiter as release_wake.lua does.
-- KEYS[1] lock: the lock key, a hash from the owner to its hold count
-- KEYS[2] queue: sorted set of waiting tickets, by arrival
-- KEYS[3] next: where the woken ticket is recorded
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
redis.call('del', KEYS[1])
while true do
  local head = redis.call('zpopmin', KEYS[2])
  if #head == 0 then
    break
  end
  if redis.call('del', head[1]) == 1 then
    redis.call('set', KEYS[3], head[1], 'PX', ARGV[2])
    break
  end
end
return 0
