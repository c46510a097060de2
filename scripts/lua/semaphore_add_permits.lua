-- Adds to the number of permits of a semaphore (the stored one, or
-- defaultSize while none is stored) and stores the sum, for every client,
-- once per call: the call's mark refuses a copy of its request. A raise
-- tells the waiter first in line (see semaphore_acquire.lua), as a release
-- does; a lowering revokes no permit held.
-- KEYS[1] size: the stored number of permits
-- KEYS[2] queue: sorted set of waiting tickets, by place
-- KEYS[3] call: the mark of this call, set where it added
-- ARGV[1] delta: the permits to add, negative to take away; not 0, and
-- at most 2^53 either way
-- ARGV[2] defaultSize: the number of permits while none is stored
-- ARGV[3] idle: how long the number, and the call's mark, are kept after
-- the semaphore's last use, in ms
-- Returns: the number of permits now, also to a copy of a call that
-- added (writing nothing); 0, writing nothing, when the sum would be
-- below 1 or above 2^53.

-- #include lib/permits.lua

local size = permitsInForce(KEYS[1], ARGV[2])
local delta = tonumber(ARGV[1])
-- Compared so, every term is exact in a Lua double.
if delta > 0 and size > 9007199254740992 - delta or delta < 0 and size <= -delta then
  -- A copy of a call that added may find the sum out of range now.
  if redis.call('exists', KEYS[3]) == 1 then
    return size
  end
  return 0
end
if not redis.call('set', KEYS[3], '1', 'NX', 'PX', ARGV[3]) then
  return size
end
size = size + delta
redis.call('set', KEYS[1], string.format('%.0f', size), 'PX', ARGV[3])
if delta > 0 then
  tellHead(KEYS[2])
end
return size
