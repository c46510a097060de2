-- Gives a semaphore lease's permits back, or takes a waiter that leaves
-- (it gave up, or won on the other nodes) out of line and marks its
-- ticket as left (see lib/marks.lua), so that an attempt of its that
-- lands later neither queues it again nor takes permits for it; and then,
-- when that or the purge of expired permits freed any, tells the waiter
-- first in line (see semaphore_acquire.lua), which wakes it to attempt.
-- Permits of the lease that expired count as not held.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] queue: sorted set of waiting tickets (their ids), by place
-- KEYS[4] tickets: hash of the line's tickets (see lib/tickets.lua)
-- KEYS[5] mark: a lease's attempt's mark, set when the lease holds
-- nothing here: the attempt may still be on its way, and must be refused
-- when it lands (see lib/left.lua), not take permits for its TTL; for a
-- waiter that leaves (no token), unread
-- ARGV[1] token: the lease's token; empty for a waiter that leaves
-- ARGV[2] n: how many permits the lease holds
-- ARGV[3] left: how long a mark stays, the attempt's or the leaving
-- waiter's ticket's, in ms (the waiter's TTL)
-- ARGV[4] byID: 1 for a release by permit ID (Semaphore.Release), which
-- marks the attempt "left:id" where it finds the lease (see lib/left.lua);
-- 2 for a force-release by holder token (Semaphore.ForceRelease), which
-- marks as 1 does where it finds the token's permits, and where it does
-- not writes no mark: the token may be mistyped, its lease never was
-- ARGV[5] ticket: the ticket id of a waiter that leaves; empty for a lease
-- Returns: 1 when all n permits were still held (and are now free), or
-- for byID 2 when any of the token's were; 2 when a release by permit ID
-- gave them back before; 0 when they had expired or were released before
-- otherwise. WRONGTYPE, with nothing written, when the permits, the
-- holders, the line or the tickets are of another type.

-- #include lib/permits.lua
-- #include lib/now.lua
-- #include lib/left.lua
-- #include lib/marks.lua

local now = serverNow()
-- The reads that fail on slots, tickets or a line of another type come
-- before the first write; a release also drops a few lapsed tickets (see
-- lapsedTickets). A leave takes its waiter out first, so that the head
-- is the one after it.
redis.call('zcard', KEYS[1])
redis.call('hlen', KEYS[2])
local gone, left = lapsedTickets(KEYS[4]), 0
if ARGV[5] ~= '' then
  left = redis.call('zrem', KEYS[3], ARGV[5])
end
local head, secret = lineHead(KEYS[3], KEYS[4])
if ARGV[5] ~= '' then
  markTicket(KEYS[4], ARGV[5], ARGV[3], gone)
else
  dropTickets(KEYS[4], gone)
end
local expired = purgePermits(KEYS[1], KEYS[2], now)
local n = tonumber(ARGV[2])
local held, byID, gave = 0, false, false
local list = redis.call('hget', KEYS[2], 't:' .. ARGV[1])
if list then
  -- One call per command over all the lease's slots, not per slot.
  local slots, listed, seen = {}, {}, 0
  for s in string.gmatch(list, '%d+') do
    seen = seen + 1
    if seen > n then -- not a list this lease wrote
      break
    end
    if not listed[s] then
      listed[s] = true
      slots[#slots + 1] = s
    end
  end
  if #slots > 0 then
    local owners = redis.call('hmget', KEYS[2], unpack(slots))
    local expiries = redis.call('zmscore', KEYS[1], unpack(slots))
    local mine = {}
    for i, s in ipairs(slots) do
      if owners[i] == ARGV[1] then
        mine[#mine + 1] = s
        if expiries[i] and tonumber(expiries[i]) > now then
          held = held + 1
        end
      end
    end
    if #mine > 0 then
      gave = true
      redis.call('zrem', KEYS[1], unpack(mine))
      redis.call('hdel', KEYS[2], unpack(mine))
    end
  end
  redis.call('hdel', KEYS[2], 't:' .. ARGV[1])
  if ARGV[4] ~= '0' then
    redis.call('set', KEYS[5], 'left:id', 'PX', ARGV[3])
  end
elseif ARGV[1] ~= '' then
  byID = releasedByID(KEYS[5])
  if byID then
    keepMark(KEYS[5], ARGV[3])
  elseif ARGV[4] ~= '2' then
    markLeft(KEYS[5], ARGV[3])
  end
end
if expired + held + left > 0 then
  tellHead(KEYS[3], KEYS[4], head, secret)
end
if held == n or ARGV[4] == '2' and gave then
  return 1
elseif byID then
  return 2
end
return 0
