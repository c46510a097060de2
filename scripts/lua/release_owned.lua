-- Releases one lease of a reentrant lock (see lib/owned.lua); when no
-- lease of the owner holds it any more, the lock is free and is handed on
-- as release_wake.lua does. It marks the attempt as release_or_mark.lua
-- does, in the same step: its own mark where the lease held nothing (the
-- attempt may still land), and its waiter's ticket always for a queued
-- waiter's lease.
-- KEYS[1] lock: the lock key, the owner's hash
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] lease: the lease's random token
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[4] left: how long the mark stays, in ms (the attempt's TTL)
-- ARGV[5] always: 1 marks the ticket too (a queued waiter's lease), 0 not
-- (the waiter's attempt that does not queue, or its undo: it waits on)
-- ARGV[6] ticket: the waiter's ticket id (or the mark)
-- ARGV[7] mark: the attempt's own mark, a ticket id (see mutex_acquire_owned.lua)
-- Returns: the owner's leases left (0: the lock is free); -1 when this lease
-- held nothing here (released before, or its hold ended).

-- #include lib/hand_on.lua
-- #include lib/owned.lua
-- #include lib/marks.lua

local held = ownedHolds(KEYS[1], ARGV[1])
markOnReleaseIn(marksMissed, held, KEYS[3], KEYS[4], ARGV[7], ARGV[4])
if ARGV[5] == '1' then
  markOnReleaseIn(marksAll, held, KEYS[3], KEYS[4], ARGV[6], ARGV[4])
end
if redis.call('type', KEYS[1]).ok ~= 'hash' then
  return -1
end
redis.call('hdel', KEYS[1], 'l:' .. ARGV[1])
local left = ownedSettle(KEYS[1])
if left == 0 then
  handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3])
end
if not held then
  return -1
end
return left
