-- Takes n permits of a semaphore at once, or none. Permits are numbered
-- slots 1..size; this node gives the first n free ones from a slot the
-- client drew at random (the same on every node of an attempt). A slot is held
-- until its expiry on the server's clock, so a holder that dies gives it
-- back at its TTL whatever the clients' clocks say: an expired slot is
-- free, whether or not a purge (bounded, see lib/purge.lua) dropped it
-- yet. Slot numbers are written as integers in digits (Lua would print
-- 15 digits and more in floating point), up to 2^53. With a quorum, a lease holds only where a majority gave it
-- the same slots, which the reply's digest lets the client tell.
-- Waiters that join (under Notify) wait in line, first come first served:
-- one takes permits only when it is first in line, and an attempt that
-- does not join (TryAcquire, Poll) only when no one is in line. A waiter
-- that takes permits and leaves enough for the next one in line tells it
-- (lib/tell.lua), which wakes it.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots, comma-separated
-- KEYS[3] size: the number of permits stored by SetPermits, kept for ARGV[9] after the last acquisition; absent until then
-- KEYS[4] fence: the fencing counter of the semaphore (see lib/fence.lua)
-- KEYS[5] queue: sorted set of waiting tickets (their ids), by place
-- KEYS[6] tickets: hash of the line's tickets (see lib/tickets.lua); a
-- waiter's holds n, the secret and its place ("<n>:<secret>:<place>",
-- see semaphoreTicket) and lapses unless an attempt refreshes it; once
-- the waiter left the line, a mark (see semaphore_release.lua), which
-- refuses a joining attempt of its with nothing written
-- KEYS[7] mark: this attempt's mark, which it sets as it lands, as does a release that finds nothing (see lib/left.lua)
-- ARGV[1] token: the lease's random token
-- ARGV[2] n: how many permits to take; -m to take every free one, at
-- most m, and at least one (a drain: Semaphore.DrainPermits)
-- ARGV[3] ttl: time to live of the permits in milliseconds
-- ARGV[4] defaultSize: the number of permits while none is stored
-- ARGV[5] seed: a random number below 2^52; the scan for free slots starts at slot seed mod size + 1
-- ARGV[6] join: 1 to wait in line, 0 not to
-- ARGV[7] place: the waiter's place in line (µs since the epoch, the same
-- on every node); 0 for the server's time. Only a waiter's first join
-- places it: later ones keep the place its ticket holds
-- ARGV[8] wait: how long the ticket lives without a refresh, in ms
-- ARGV[9] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[10] secret: this attempt's secret, which keys the MAC of the waiter's wake-ups (see lib/tell.lua)
-- ARGV[11] ticket: this waiter's ticket id; empty for an attempt that
-- does not wait (TryAcquire, DrainPermits)
-- Returns: {status, fence, retry, size, slots}: status, when acquired,
-- the number of permits taken (n, or what a drain took); 0 when fewer
-- than n permits are free (for a drain: none), another waiter is first in line,
-- or the scan from the seed found fewer than n free slots within
-- scanLimit slots past n (retry 0: another seed may find them),
-- -1 when n exceeds size (nothing written); fence, the counter after an
-- acquisition (else 0); retry, when fewer than n are free, the
-- milliseconds until enough expire (-1 when another waiter is first, 0
-- when acquired); size, the number of permits in force; slots, a 52-bit
-- digest of the slots given (else 0).
-- The error reply BADFENCE, with nothing written, when the fencing counter
-- is malformed (see lib/fence.lua); WRONGTYPE, with nothing written, when
-- the permits, the holders, the line, or the tickets of a joining
-- attempt, are of another type.

-- #include lib/ticket_head.lua
-- #include lib/tell.lua
-- #include lib/permits.lua
-- #include lib/slots_digest.lua
-- #include lib/fence.lua
-- #include lib/now.lua
-- #include lib/lengthen.lua
-- #include lib/left.lua
-- #include lib/marks.lua

-- The most slots an attempt looks at past the n it takes: slots are held
-- in runs, and a scan through a long run would block the server.
local scanLimit = 500

-- A malformed fencing counter refuses the attempt before it writes.
local counter, bad = readFence(KEYS[4])
if bad then
  return bad
end
local size, stored = permitsInForce(KEYS[3], ARGV[4])
local n = tonumber(ARGV[2])
if n > size then
  return {-1, 0, 0, size, 0}
end
-- The reads that fail on the slots, the line, or the tickets of a joining
-- attempt, of another type come before the first write (the head's, of
-- the dead members before it, comes after its read).
redis.call('zcard', KEYS[1])
redis.call('hlen', KEYS[2])
local joins = ARGV[6] == '1'
local gone, kept
if joins then
  gone = lapsedTickets(KEYS[6])
  kept = ticketIn(KEYS[6], ARGV[11])
  if isMark(kept) then
    return {0, 0, 0, size, 0} -- an attempt of a waiter that left the line, landing late
  end
end
local head = liveHeadIn(KEYS[5], KEYS[6], isSemaphoreTicket)
if landed(KEYS[7], true, ARGV[3]) then -- the mark is the attempt's own
  local list = redis.call('hget', KEYS[2], 't:' .. ARGV[1])
  if list then
    local taken = select(2, string.gsub(list, '%d+', ''))
    return {taken, counter or serverNow() * 1024, 0, size, slotsDigest(list)} -- a copy of this attempt, which took permits
  end
  return {0, 0, 0, size, 0} -- released, undone or landed already, landing late
end
local now = serverNow()
purgePermits(KEYS[1], KEYS[2], now)
local free = size - redis.call('zcount', KEYS[1], '(' .. now, '+inf')
local drain = n < 0
if drain then
  n = math.min(-n, free)
  if n < 1 then
    return {0, 0, 0, size, 0}
  end
end
local ttl = tonumber(ARGV[3])
if joins then
  -- A waiter's place is given once, as it first joins, and its ticket
  -- keeps it: a waiter passed over (out of line, its ticket kept) joins
  -- again at it, and an attempt cannot move it, whatever place it asks.
  local place = redis.call('zscore', KEYS[5], ARGV[11]) or select(3, semaphoreTicket(kept)) or tonumber(ARGV[7])
  if tonumber(place) == 0 then -- the server gives places in line: its time in µs
    local t = redis.call('time')
    place = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  place = string.format('%.0f', tonumber(place))
  redis.call('zadd', KEYS[5], 'NX', place, ARGV[11])
  -- The drop comes before the ticket: the sample may hold it, lapsed.
  dropTickets(KEYS[6], gone)
  putTicket(KEYS[6], ARGV[11], ARGV[2] .. ':' .. ARGV[10] .. ':' .. place, ARGV[8])
  lengthen(KEYS[5], ARGV[8])
  head = liveHeadIn(KEYS[5], KEYS[6], isSemaphoreTicket)
end
if free < n then
  -- n <= size, so at least n - free live slots are held: the (n - free)-th
  -- earliest expiry among them (after the expired ones not purged yet)
  -- frees enough.
  local at = redis.call('zcount', KEYS[1], '-inf', now) + n - free - 1
  local e = redis.call('zrange', KEYS[1], at, at, 'WITHSCORES')
  return {0, 0, tonumber(e[2]) - now, size, 0}
end
if head and head ~= ARGV[11] then
  -- The waiters ahead go first: the first is told when it fits, and one
  -- that cannot hear is passed over (see tellHead). A release passes over
  -- a few Clients only: past them, waiters that died ahead hold the line
  -- up no longer than the next attempt of the waiter behind them.
  passDeaf(function()
    return liveHeadIn(KEYS[5], KEYS[6], isSemaphoreTicket)
  end, function(ticket, value)
    if ticket == ARGV[11] then
      return true
    end
    local wants, secret = semaphoreTicket(value)
    return free < tonumber(wants) or tell(ticket, 0, secret)
  end, dropFrom(KEYS[5]))
  head = liveHeadIn(KEYS[5], KEYS[6], isSemaphoreTicket)
  if head and head ~= ARGV[11] then
    return {0, 0, -1, size, 0}
  end
end
-- At most size - free slots are held, so n of 1..size are free. Starting
-- where the client chose, concurrent attempts take different slots, and
-- where the nodes' free slots differ (a lease holds its slots on a
-- majority only) some start finds slots free on a majority.
local slots = {}
local start = tonumber(ARGV[5]) % size
local looked, limit = 0, math.min(size, n + scanLimit)
while #slots < n and looked < limit do
  local batch, names = {}, {}
  for i = looked, math.min(looked + math.max(n - #slots, 100), limit) - 1 do
    batch[#batch + 1] = (start + i) % size + 1
    names[#names + 1] = string.format('%d', batch[#batch])
  end
  looked = looked + #batch
  local expiries = redis.call('zmscore', KEYS[1], unpack(names))
  for i = 1, #batch do
    if not expiries[i] or tonumber(expiries[i]) <= now then
      slots[#slots + 1] = batch[i]
      if #slots == n then
        break
      end
    end
  end
end
if drain and #slots > 0 then
  n = #slots -- the scan's limit left the others for another seed
end
if #slots < n then
  return {0, 0, 0, size, 0}
end
-- Out of line, its ticket goes: a later attempt of the waiter writes it again.
if joins and redis.call('zrem', KEYS[5], ARGV[11]) == 1 then
  redis.call('hdel', KEYS[6], ARGV[11])
end
table.sort(slots)
for i, s in ipairs(slots) do
  slots[i] = string.format('%d', s)
end
-- A slot that expired but was not purged yet still names its lease,
-- which lost it: that lease's list of slots goes.
local stale = {}
for _, before in ipairs(redis.call('hmget', KEYS[2], unpack(slots))) do
  if before then
    stale[#stale + 1] = 't:' .. before
  end
end
if #stale > 0 then
  redis.call('hdel', KEYS[2], unpack(stale))
end
local scored, owned = {}, {}
for _, s in ipairs(slots) do
  scored[#scored + 1] = now + ttl
  scored[#scored + 1] = s
  owned[#owned + 1] = s
  owned[#owned + 1] = ARGV[1]
end
redis.call('zadd', KEYS[1], unpack(scored))
local list = table.concat(slots, ',')
owned[#owned + 1] = 't:' .. ARGV[1]
owned[#owned + 1] = list
redis.call('hset', KEYS[2], unpack(owned))
for _, k in ipairs({KEYS[1], KEYS[2]}) do
  lengthen(k, ttl)
end
-- The next in line is told when it fits; one that cannot hear is passed
-- over (see tellHead).
passDeaf(function()
  return liveHeadIn(KEYS[5], KEYS[6], isSemaphoreTicket)
end, function(ticket, value)
  local wants, secret = semaphoreTicket(value)
  return free - n < tonumber(wants) or tell(ticket, 0, secret)
end, dropFrom(KEYS[5]))
if stored and redis.call('pttl', KEYS[3]) < tonumber(ARGV[9]) then
  redis.call('pexpire', KEYS[3], ARGV[9])
end
return {n, drawnFrom(KEYS[4], counter, ARGV[9]), 0, size, slotsDigest(list)}
