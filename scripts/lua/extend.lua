-- Compare-and-set of the expiry: extends a plain lock only for its holder,
-- and only ever lengthens it, so that an extension that lands late (its
-- reply timed out, a longer one followed) cannot cut the lease short.
-- KEYS[1] lock: the lock key
-- ARGV[1] token: the holder's token
-- ARGV[2] ttl: the time to live in milliseconds it needs at least
-- Returns: 1 when the token holds the lock here; 0 when the key is absent
-- or not this holder's.

-- #include lib/lengthen.lua

if redis.call('type', KEYS[1]).ok ~= 'string' or redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
lengthen(KEYS[1], ARGV[2])
return 1
