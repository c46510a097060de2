-- Stores the number of permits of a semaphore, for every client, only
-- when none is stored, and then tells the waiter first in line (see
-- semaphore_acquire.lua), which may fit now. The call's mark lets a copy
-- of its request tell the number its own.
-- KEYS[1] size: the stored number of permits
-- KEYS[2] queue: sorted set of waiting tickets (their ids), by place
-- KEYS[3] tickets: hash of the line's tickets (see lib/tickets.lua)
-- KEYS[4] call: the mark of this call, set where it stored the number
-- ARGV[1] permits: the number of permits to store
-- ARGV[2] idle: how long the number, and the call's mark, are kept after
-- the semaphore's last use, in ms
-- Returns: 1 when it stored the number, now or by an earlier copy of this
-- call; 0, writing nothing, when another had stored one. WRONGTYPE, with
-- nothing written, when the line is of another type.

-- #include lib/permits.lua

if redis.call('exists', KEYS[1]) == 1 then
  return redis.call('exists', KEYS[4])
end
local head, secret = lineHead(KEYS[2], KEYS[3])
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('set', KEYS[4], '1', 'PX', ARGV[2])
tellHead(KEYS[2], KEYS[3], head, secret)
return 1
