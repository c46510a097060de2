-- Acquires a reentrant lock for an owner, counting holds per owner the way
-- Redisson's lock does, and draws a fencing token on every acquisition.
-- KEYS[1] lock: the lock key, a hash from the owner to its hold count
-- KEYS[2] fence: the fencing counter of the lock name; it never expires
-- ARGV[1] owner: the owner identity
-- ARGV[2] ttl: time to live in milliseconds; a re-entry never shortens it
-- Returns: {1, fence, 0} when acquired or re-entered; {0, 0, pttl} when held
-- by another (pttl: the holder's remaining milliseconds, -1 without expiry).
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' or (kind == 'hash' and redis.call('hexists', KEYS[1], ARGV[1]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  return {1, redis.call('incr', KEYS[2]), 0}
end
return {0, 0, redis.call('pttl', KEYS[1])}
