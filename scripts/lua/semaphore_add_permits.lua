-- Adds to the number of permits of a semaphore (the stored one, or
-- defaultSize while none is stored) and stores the sum, for every client,
-- once per call: the call's mark refuses a copy of its request. A raise
-- tells the waiter first in line (see semaphore_acquire.lua), as a release
-- does; a lowering revokes no permit held.
-- KEYS[1] size: the stored number of permits
-- KEYS[2] queue: sorted set of waiting tickets (their ids), by place
-- KEYS[3] tickets: hash of the line's tickets (see lib/tickets.lua)
-- KEYS[4] call: the mark of this call, set where it added
-- ARGV[1] delta: the permits to add, negative to take away; not 0, and
-- at most 2^53 either way
-- ARGV[2] defaultSize: the number of permits while none is stored
-- ARGV[3] idle: how long the number, and the call's mark, are kept after
-- the semaphore's last use, in ms
-- Returns: the number of permits now, also to a copy of a call that
-- added (writing nothing); 0, writing nothing, when the sum would be
-- below 1 or above 2^53; WRONGTYPE, with nothing written, when a raise
-- finds the line of another type.

-- #include lib/permits.lua

local size = permitsInForce(KEYS[1], ARGV[2])
local delta = tonumber(ARGV[1])
-- A copy of a call that added, which may find the sum out of range now.
if redis.call('exists', KEYS[4]) == 1 then
  return size
end
-- Compared so, every term is exact in a Lua double.
if delta > 0 and size > 9007199254740992 - delta or delta < 0 and size <= -delta then
  return 0
end
-- A raise reads the head before the first write.
local head, secret
if delta > 0 then
  head, secret = lineHead(KEYS[2], KEYS[3])
end
redis.call('set', KEYS[4], '1', 'PX', ARGV[3])
size = size + delta
redis.call('set', KEYS[1], string.format('%.0f', size), 'PX', ARGV[3])
tellHead(KEYS[2], KEYS[3], head, secret)
return size
