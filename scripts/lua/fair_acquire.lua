-- Queues a waiter for a fair (first come, first served) lock and grants it
-- the lock when it is first in line and the lock is free. Every entry in
-- line lapses unless its waiter's attempts refresh it, so a waiter that died
-- never holds the line up for long; an entry without a lapse time, or
-- whose ticket a grant cannot use, is dead (see lib/line_head.lua). An attempt that finds the lock free
-- with another waiter first grants the lock to that waiter, as a release
-- does (see fair_release.lua). A holder keeps its place until it releases
-- (or its place lapses), so that an attempt undone for want of a quorum
-- keeps it too. An owner's attempt (see lib/owned.lua) that finds the
-- lock held by the owner holds it too, at once, without joining the line.
-- KEYS[1] lock: the lock key, a string holding the holder's token, or the
-- owner's hash of its leases' tokens
-- KEYS[2] fence: the fencing counter of the lock name (see lib/fence.lua)
-- KEYS[3] queue: sorted set of waiters' tokens by place in line
-- KEYS[4] lapse: sorted set of waiters' tokens by the server time (ms) their place lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- ARGV[1] token: the waiter's token, which becomes the holder's; its ticket
-- holds the TTL a grant gives it and ARGV[5] ("<ttl>:<secret>")
-- ARGV[2] ttl: the lock's time to live in milliseconds
-- ARGV[3] place: the waiter's place in line; 0 joins behind the last waiter
-- ARGV[4] wait: how long the place lasts without a refresh, in milliseconds;
-- 0 does not queue (TryLock: granted only when no one waits)
-- ARGV[5] secret: this attempt's secret, which keys a grant's MAC (see lib/tell.lua)
-- ARGV[6] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[7] owner: the owner of a reentrant lock, whose ticket ends in
-- ":<owner>"; empty for a plain lock
-- Returns: {1, fence, 0} when acquired (or granted to the token before: the
-- TTL starts again, unless it lasts longer already); {0, 0, pttl} when not (pttl: the
-- holder's remaining milliseconds, -1 without expiry, -2 when the lock is
-- free but another waiter is first).
-- The error reply BADFENCE, with nothing written, when the fencing counter
-- is malformed (see lib/fence.lua); WRONGTYPE, with nothing written, when
-- the tickets key is no hash.

-- #include lib/grant.lua
-- #include lib/line_head.lua
-- #include lib/held_reply.lua
-- #include lib/lengthen.lua

-- A malformed fencing counter refuses the attempt before it writes.
local counter, bad = readFence(KEYS[2])
if bad then
  return bad
end
checkTickets(KEYS[5])
local try = tonumber(ARGV[4]) == 0 -- a TryLock, whose ticket is its own (see lib/left.lua)
local late = lateReply(KEYS[1], counter, KEYS[5], ARGV[1], try, ARGV[2])
if late then return late end
local again = reenterReply(KEYS[1], KEYS[2], counter, ARGV[7], ARGV[1], ARGV[2], ARGV[6])
if again then return again end
local now = ticketNow()
purgeLine(KEYS[3], KEYS[4], now)
local wait = tonumber(ARGV[4])
if wait > 0 then
  if not redis.call('zscore', KEYS[3], ARGV[1]) then
    local place = ARGV[3]
    if place == '0' then
      local last = redis.call('zrange', KEYS[3], -1, -1, 'WITHSCORES')[2]
      place = 1
      if last then
        place = tonumber(last) + 1
      end
    end
    redis.call('zadd', KEYS[3], place, ARGV[1])
  end
  redis.call('zadd', KEYS[4], now + wait, ARGV[1])
  local value = ARGV[2] .. ':' .. ARGV[5]
  if ARGV[7] ~= '' then
    value = value .. ':' .. ARGV[7]
  end
  writeTicket(KEYS[5], tokenTicket(KEYS[5], ARGV[1]), value, wait)
  -- The sets live as long as their longest-lived entry.
  lengthen(KEYS[3], wait)
  lengthen(KEYS[4], wait)
end
local held, pttl = heldReply(KEYS[1], counter, ARGV[1], ARGV[2])
if held then return held end
if pttl == -2 then
  local first = fairHead(KEYS[3], KEYS[4], KEYS[5], now)
  if first == ARGV[1] or (wait == 0 and first == nil) then
    return takeFree(KEYS[1], KEYS[2], counter, ARGV[1], ARGV[2], ARGV[6], ARGV[7])
  end
  if first then
    grant(KEYS[1], KEYS[2], KEYS[5], first, ARGV[6])
  end
end
return {0, 0, pttl}
