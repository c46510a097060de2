-- Stores the number of permits of a semaphore, for every client, only
-- when none is stored, and then tells the waiter first in line (see
-- semaphore_acquire.lua), which may fit now.
-- KEYS[1] size: the stored number of permits
-- KEYS[2] queue: sorted set of waiting tickets, by place
-- ARGV[1] permits: the number of permits to store
-- ARGV[2] idle: how long the number is kept after the semaphore's last use, in ms
-- Returns: 1 when it stored the number; 0, writing nothing, when one was
-- stored already.

-- #include lib/permits.lua

if not redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
tellHead(KEYS[2])
return 1
