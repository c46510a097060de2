-- Acquires a plain (non-reentrant) lock and draws a fencing token.
-- KEYS[1] lock: the lock key, a string holding the holder's token
-- KEYS[2] fence: the fencing counter of the lock name; it never expires
-- ARGV[1] token: the new holder's random token
-- ARGV[2] ttl: time to live in milliseconds
-- Returns: {1, fence, 0} when acquired; {0, 0, pttl} when held by another
-- (pttl: the holder's remaining milliseconds, -1 when it has no expiry).
if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return {1, redis.call('incr', KEYS[2]), 0}
end
return {0, 0, redis.call('pttl', KEYS[1])}
