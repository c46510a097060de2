-- Releases one hold of a reentrant lock; the last hold frees the lock and
-- hands it on as release_wake.lua does.
-- KEYS[1] lock: the lock key, a hash from the owner to its hold count
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- ARGV[1] owner: the owner identity
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- Returns: the owner's holds left (0: the lock is free); -1 when the owner
-- holds nothing here.

-- #include lib/hand_on.lua

if redis.call('type', KEYS[1]).ok ~= 'hash' or redis.call('hexists', KEYS[1], ARGV[1]) == 0 then
  return -1
end
local left = redis.call('hincrby', KEYS[1], ARGV[1], -1)
if left > 0 then
  return left
end
handOn(KEYS[1], KEYS[2], KEYS[3], ARGV[2])
return 0
