-- Compare-and-delete: releases a plain lock only for its holder.
-- KEYS[1] lock: the lock key
-- ARGV[1] token: the holder's token
-- Returns: 1 when deleted; 0 when the key is absent or not this holder's.

-- #include lib/value.lua

if valueOf(KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
