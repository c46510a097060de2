-- Frees a fair lock whoever holds it (an operator's force-release): the
-- holder leaves the line for good, as its release would (see
-- fair_release.lua), and the lock is granted to the waiter first in line.
-- Its token goes into the forced marker for as long as its hold had left
-- (see lib/forced.lua), so that its Extend and Unlock answer that it was
-- forced.
-- KEYS[1] lock: the lock key, a string holding the holder's token, or the
-- owner's hash of its leases' tokens (see lib/owned.lua), each of which is
-- forced
-- KEYS[2] fence: the fencing counter of the lock name (see lib/fence.lua)
-- KEYS[3] queue: sorted set of waiters' tokens by place in line
-- KEYS[4] lapse: sorted set of waiters' tokens by the server time (ms) their place lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- KEYS[6] forced: the lock's forced marker
-- ARGV[1] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[2] left: how long the holder's ticket stays marked as left, in ms
-- Returns: 1 when the lock was held and is freed; 0 when it was free.
-- The error reply WRONGTYPE, with nothing written, when the tickets key is
-- no hash.

-- #include lib/grant.lua
-- #include lib/line_head.lua
-- #include lib/forced.lua

local bad = badForced(KEYS[6])
if bad then
  return bad
end
local kind = redis.call('type', KEYS[1]).ok
if kind ~= 'string' and kind ~= 'hash' then
  return 0
end
checkTickets(KEYS[5])
local held = holders(KEYS[1])
local left = redis.call('pttl', KEYS[1])
redis.call('del', KEYS[1])
for _, holder in ipairs(held) do
  markForced(KEYS[6], holder, left)
  leaveForGoodIn(KEYS[5], holder, ARGV[2], KEYS[3], KEYS[4])
end
local now = ticketNow()
purgeLine(KEYS[3], KEYS[4], now)
local first = fairHead(KEYS[3], KEYS[4], KEYS[5], now)
if first then
  grant(KEYS[1], KEYS[2], KEYS[5], first, ARGV[1])
end
return 1
