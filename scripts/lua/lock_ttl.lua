-- Reads how long a token still holds a lock key (a plain Mutex's or a
-- MultiLock's name, a FairMutex's lock, an RWMutex's write lock); it
-- writes nothing. One key, as an extension may be sent: a Redis Cluster
-- serves it while the slot migrates, where a script over the lock and the
-- name's other keys gets TRYAGAIN until the migration ends: the forced
-- marker is read where it is another key; a caller that got TRYAGAIN
-- passes the lock key again in its place, and it goes unread.
-- KEYS[1] lock: the lock key, a string holding the holder's token
-- KEYS[2] forced: the lock's forced marker (see lib/forced.lua), or the lock key
-- ARGV[1] token: the lease's token
-- Returns: the lock's remaining milliseconds, as PTTL gives them (-1 for
-- a key made persistent), when the token holds it; 0 when it does not;
-- leaseForced when a force-release freed the token.

-- #include lib/value.lua
-- #include lib/forced.lua

if KEYS[2] ~= KEYS[1] and wasForced(KEYS[2], ARGV[1]) then
  return leaseForced
end
if valueOf(KEYS[1]) ~= ARGV[1] then
  return 0
end
return redis.call('pttl', KEYS[1])
