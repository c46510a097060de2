-- Extends a reentrant lock only while the owner holds it.
-- KEYS[1] lock: the lock key, a hash from the owner to its hold count
-- ARGV[1] owner: the owner identity
-- ARGV[2] ttl: the new time to live in milliseconds
-- Returns: 1 when extended; 0 when the owner holds nothing here.
if redis.call('type', KEYS[1]).ok == 'hash' and redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
