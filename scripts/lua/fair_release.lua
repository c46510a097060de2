-- Releases a fair lock for its holder, or takes a waiter that gives up out
-- of line; either, for good, marks the ticket as left, so that the
-- waiter's attempts that land later are refused (see lib/left.lua). Then,
-- when the lock is free, grants it to the waiter first in line as
-- fair_acquire.lua does.
-- KEYS[1] lock: the lock key, a string holding the holder's token, or the
-- owner's hash of its leases' tokens (see lib/owned.lua), which is free
-- once the last of them released
-- KEYS[2] fence: the fencing counter of the lock name (see lib/fence.lua)
-- KEYS[3] queue: sorted set of waiters' tokens by place in line
-- KEYS[4] lapse: sorted set of waiters' tokens by the server time (ms) their place lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- ARGV[1] token: the holder's or the waiter's token
-- ARGV[2] keep: 1 to undo an attempt that did not win a quorum, keeping the
-- waiter's place; 0 to release for good and leave the line
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[4] left: how long a leaving waiter's ticket stays marked as left, in ms (its TTL)
-- Returns: 1 when the token held the lock and gave it up; 0 otherwise.
-- The error reply WRONGTYPE, with nothing written, when the tickets key is
-- no hash and keep is 0.

-- #include lib/grant.lua
-- #include lib/line_head.lua

if ARGV[2] == '0' then
  checkTickets(KEYS[5]) -- it marks the ticket
end
local released = letGo(KEYS[1], ARGV[1])
if ARGV[2] == '0' then
  leaveForGoodIn(KEYS[5], ARGV[1], ARGV[4], KEYS[3], KEYS[4])
end
if redis.call('exists', KEYS[1]) == 0 then
  local now = ticketNow()
  purgeLine(KEYS[3], KEYS[4], now)
  local first = fairHead(KEYS[3], KEYS[4], KEYS[5], now)
  if first and first ~= ARGV[1] then
    grant(KEYS[1], KEYS[2], KEYS[5], first, ARGV[3])
  end
end
return released
