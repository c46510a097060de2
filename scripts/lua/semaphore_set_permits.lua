-- Stores the number of permits of a semaphore, for every client, and
-- tells the waiter first in line (see semaphore_acquire.lua), which may
-- fit now.
-- KEYS[1] size: the stored number of permits
-- KEYS[2] queue: sorted set of waiting tickets (their ids), by place
-- KEYS[3] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] permits: the new number of permits
-- ARGV[2] idle: how long the number is kept after the semaphore's last use, in ms
-- Returns: the number stored before; 0 when none was. WRONGTYPE, with
-- nothing written, when the line is of another type.

-- #include lib/permits.lua

local prev = tonumber(redis.call('get', KEYS[1]) or '0')
local head, secret = lineHead(KEYS[2], KEYS[3])
redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
tellHead(KEYS[2], KEYS[3], head, secret)
return prev
