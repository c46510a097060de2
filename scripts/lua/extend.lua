-- Compare-and-set of the expiry: extends a plain lock only for its holder.
-- KEYS[1] lock: the lock key
-- ARGV[1] token: the holder's token
-- ARGV[2] ttl: the new time to live in milliseconds
-- Returns: 1 when extended; 0 when the key is absent or not this holder's.
if redis.call('type', KEYS[1]).ok == 'string' and redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('pexpire', KEYS[1], ARGV[2])
end
return 0
