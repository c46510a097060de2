-- Stores the number of permits of a semaphore, for every client, and
-- deletes the signal key so that its keyspace event wakes the waiters,
-- which may fit now.
-- KEYS[1] size: the stored number of permits
-- KEYS[2] signal: the key refused acquisitions set
-- ARGV[1] permits: the new number of permits
-- Returns: the number stored before; 0 when none was.
local prev = tonumber(redis.call('get', KEYS[1]) or '0')
redis.call('set', KEYS[1], ARGV[1])
redis.call('del', KEYS[2])
return prev
