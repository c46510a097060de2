-- Frees a reader/writer lock whoever holds it, the writer and every read
-- lease (an operator's force-release), and hands on as rw_release.lua
-- does: it grants the lock to the first waiting writer, or else wakes
-- every waiting reader. The writer leaves the line for good, as its
-- release would, and its token goes into the forced marker for as long as
-- its hold had left (see lib/forced.lua), so that its Extend and Unlock
-- answer that it was forced; the readers' do not.
-- KEYS[1] writer: the write lock, a string holding the writer's token, or
-- the owner's hash of its write leases' tokens (see lib/exclusive.lua)
-- KEYS[2] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- KEYS[3] writers: sorted set of waiting writers' tokens by the time their wait lapses
-- KEYS[4] waiting: sorted set of waiting readers' tokens by the time their wait lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- KEYS[6] fence: the fencing counter of the lock name (see lib/fence.lua)
-- KEYS[7] forced: the write lock's forced marker
-- ARGV[1] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[2] left: how long the writer's ticket stays marked as left, in ms
-- Returns: 1 when the writer or a live read lease held the lock and it is
-- freed; 0 when it was free.
-- The error reply WRONGTYPE, with nothing written, when the tickets key is
-- no hash.

-- #include lib/grant.lua
-- #include lib/line_head.lua
-- #include lib/forced.lua
-- #include lib/wake.lua

local bad = badForced(KEYS[7])
if bad then
  return bad
end
local now = ticketNow()
local freed = 0
local kind = redis.call('type', KEYS[1]).ok
if kind == 'string' or kind == 'hash' then
  checkTickets(KEYS[5])
  local held = holders(KEYS[1])
  local left = redis.call('pttl', KEYS[1])
  redis.call('del', KEYS[1])
  for _, writer in ipairs(held) do
    markForced(KEYS[7], writer, left)
    leaveForGoodIn(KEYS[5], writer, ARGV[2], KEYS[3], KEYS[4])
  end
  freed = 1
end
if liveReaders(KEYS[2], now) > 0 then
  freed = 1
end
if freed == 0 then
  return 0
end
-- UNLINK: a large set is freed off the server's main thread.
redis.call('unlink', KEYS[2])
purgeLapsed(now, KEYS[3])
local writer = firstWriter(KEYS[3], KEYS[5], now)
if writer ~= nil then
  if writer then
    grant(KEYS[1], KEYS[6], KEYS[5], writer, ARGV[1])
  end
  return 1
end
if redis.call('unlink', KEYS[4]) == 1 then
  wake(KEYS[4])
end
return 1
