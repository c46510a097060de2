-- Releases one hold of a reentrant lock; the last hold deletes the key.
-- KEYS[1] lock: the lock key, a hash from the owner to its hold count
-- ARGV[1] owner: the owner identity
-- Returns: the owner's holds left (0: the lock is free); -1 when the owner
-- holds nothing here.
if redis.call('type', KEYS[1]).ok ~= 'hash' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left <= 0 then
  redis.call('del', KEYS[1])
  return 0
end
return left
