-- Grants the write lease when no writer and no reader holds the lock. A
-- writer that must wait registers (its wait lapses unless refreshed by its
-- attempts), which keeps new readers out until it is through, and gets a
-- ticket holding its TTL, with which a release grants it the lock (see
-- lib/grant.lua) when it listens. A holder stays registered until it
-- releases, so an attempt undone for want of a quorum keeps readers out
-- all the same. An owner's attempt (see lib/exclusive.lua) that finds the
-- write lock held by the owner holds it too, at once, without waiting.
-- KEYS[1] writer: the write lock, a string holding the writer's token, or
-- the owner's hash of its write leases' tokens
-- KEYS[2] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- KEYS[3] writers: sorted set of waiting writers' tokens by the time their wait lapses
-- KEYS[4] waiting: sorted set of waiting readers' tokens by the time their wait lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- KEYS[6] fence: the fencing counter of the lock name (see lib/fence.lua)
-- ARGV[1] token: the write lease's token
-- ARGV[2] ttl: the lease's time to live in milliseconds
-- ARGV[3] wait: how long the writer's wait lasts without a refresh, in
-- milliseconds; 0 does not wait (TryLock)
-- ARGV[4] secret: when the waiter hears grants (Notify), this attempt's
-- secret, which keys a grant's MAC (see lib/tell.lua): its ticket holds the
-- TTL a grant gives it and the secret ("<ttl>:<secret>"); empty when no
-- one would tell it (Poll): its ticket holds 0 and a release leaves the
-- lock free for the next attempt
-- ARGV[5] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[6] owner: the owner of a reentrant write lock, whose ticket ends in
-- ":<owner>"; empty for a plain one
-- Returns: {1, fence, 0} when granted (or granted to the token before: the
-- TTL starts again, unless it lasts longer already); {0, 0, pttl} when not (pttl: the writer's remaining
-- milliseconds, or the time until the first read lease lapses; -1 without
-- expiry).
-- The error reply BADFENCE, with nothing written, when the fencing counter
-- is malformed (see lib/fence.lua); WRONGTYPE, with nothing written, when
-- the tickets key is no hash.

-- #include lib/purge.lua
-- #include lib/fence.lua
-- #include lib/held_reply.lua
-- #include lib/lengthen.lua

-- A malformed fencing counter refuses the attempt before it writes.
local counter, bad = readFence(KEYS[6])
if bad then
  return bad
end
checkTickets(KEYS[5])
local try = tonumber(ARGV[3]) == 0 -- a TryLock, whose ticket is its own (see lib/left.lua)
local late = lateReply(KEYS[1], counter, KEYS[5], ARGV[1], try, ARGV[2])
if late then return late end
local again = reenterReply(KEYS[1], KEYS[6], counter, ARGV[6], ARGV[1], ARGV[2], ARGV[5])
if again then return again end
local now = ticketNow()
purgeLapsed(now, KEYS[2], KEYS[3], KEYS[4])
local wait = tonumber(ARGV[3])
if wait > 0 then
  redis.call('zadd', KEYS[3], now + wait, ARGV[1])
  local grant = '0'
  if ARGV[4] ~= '' then
    grant = ARGV[2] .. ':' .. ARGV[4]
    if ARGV[6] ~= '' then
      grant = grant .. ':' .. ARGV[6]
    end
  end
  writeTicket(KEYS[5], tokenTicket(KEYS[5], ARGV[1]), grant, wait)
  lengthen(KEYS[3], wait)
end
local held, pttl = heldReply(KEYS[1], counter, ARGV[1], ARGV[2])
if held then return held end
if pttl == -2 then
  local reader = redis.call('zrangebyscore', KEYS[2], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
  if not reader[1] then
    return takeFree(KEYS[1], KEYS[6], counter, ARGV[1], ARGV[2], ARGV[5], ARGV[6])
  end
  pttl = tonumber(reader[2]) - now
end
return {0, 0, pttl}
