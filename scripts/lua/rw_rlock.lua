-- Grants a read lease while no writer holds the lock or waits for it:
-- a waiting writer keeps new readers out, so readers cannot starve it. A
-- reader that must wait registers in the waiting set, whose deletion by a
-- release wakes it (see rw_release.lua). A free lock with a writer waiting
-- and no reader left is granted to that writer (see lib/grant.lua). Read
-- leases and waits lapse by server time, so a reader or a writer that died
-- frees its share at its TTL. An owner's reader whose owner holds the
-- write lock (see lib/exclusive.lua) is granted at once, writers waiting
-- or not: it reads what its owner writes, as a Downgrade would.
-- KEYS[1] writer: the write lock, a string holding the writer's token, or
-- the owner's hash of its write leases' tokens
-- KEYS[2] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- KEYS[3] writers: sorted set of waiting writers' tokens by the time their wait lapses
-- KEYS[4] waiting: sorted set of waiting readers' tokens by the time their wait lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- KEYS[6] fence: the fencing counter of the lock name (see lib/fence.lua)
-- ARGV[1] token: the read lease's token
-- ARGV[2] ttl: the lease's time to live in milliseconds
-- ARGV[3] wait: how long the reader's wait lasts without a refresh, in
-- milliseconds; 0 does not wait (TryRLock)
-- ARGV[4] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[5] owner: the reader's owner; empty for none
-- Returns: {1, fence, 0} when granted; {0, 0, pttl} when not (pttl: the
-- writer's remaining milliseconds, -1 without expiry, -2 when a writer waits).
-- The error reply BADFENCE, with nothing written, when the fencing counter
-- is malformed (see lib/fence.lua); WRONGTYPE, with nothing written, when
-- the tickets key is no hash and the attempt is a TryRLock (which marks
-- its ticket).

-- #include lib/grant.lua
-- #include lib/line_head.lua
-- #include lib/lengthen.lua

-- A malformed fencing counter refuses the attempt before it writes.
local counter, bad = readFence(KEYS[6])
if bad then
  return bad
end
local try = tonumber(ARGV[3]) == 0 -- a TryRLock, whose ticket is its own (see lib/left.lua)
if try then
  checkTickets(KEYS[5]) -- it marks its own ticket
end
if landedIn(KEYS[5], tokenTicket(KEYS[5], ARGV[1]), try, ARGV[2]) then
  if try and redis.call('zscore', KEYS[2], ARGV[1]) then
    return {1, counter or ticketNow() * 1024, 0} -- a copy of this TryRLock, which took a read lease
  end
  return {0, 0, 0} -- an attempt of a reader that released or left, or a TryRLock that landed already, landing late
end
local now = ticketNow()
purgeLapsed(now, KEYS[2], KEYS[3], KEYS[4])
local ttl = tonumber(ARGV[2])
local wait = tonumber(ARGV[3])
local function read()
  -- Never shortened: this may be an attempt that landed late, after
  -- the lease it belongs to was extended.
  local lapse = redis.call('zscore', KEYS[2], ARGV[1])
  if not lapse or tonumber(lapse) < now + ttl then
    redis.call('zadd', KEYS[2], now + ttl, ARGV[1])
  end
  lengthen(KEYS[2], ttl)
  redis.call('zrem', KEYS[4], ARGV[1])
  return {1, drawnFrom(KEYS[6], counter, ARGV[4]), 0}
end
if ownedBy(KEYS[1], ARGV[5]) then
  return read()
end
local pttl = redis.call('pttl', KEYS[1])
if pttl == -2 then
  local writer = firstWriter(KEYS[3], KEYS[5], now)
  if writer == nil then
    return read()
  end
  if writer and liveReaders(KEYS[2], now) == 0 then
    -- Nothing holds the writer up: hand it the lock.
    grant(KEYS[1], KEYS[6], KEYS[5], writer, ARGV[4])
  end
end
if wait > 0 then
  redis.call('zadd', KEYS[4], now + wait, ARGV[1])
  lengthen(KEYS[4], wait)
end
return {0, 0, pttl}
