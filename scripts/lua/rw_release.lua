-- Gives up a read or write lease, or a wait, and hands on to who may go
-- next when the lock is free: it grants the lock to a waiting writer once
-- no reader is left (see lib/grant.lua), or else wakes every waiting
-- reader at once: it deletes their waiting set and tells each of their
-- Clients once, on the set's channel (see lib/wake.lua), so that a release
-- costs the same however many readers wait, and nothing when none waits. A lease or a waiter that
-- leaves for good marks its ticket as left, so that its attempts that land
-- later are refused (see lib/left.lua).
-- KEYS[1] writer: the write lock, a string holding the writer's token, or
-- the owner's hash of its write leases' tokens (see lib/exclusive.lua),
-- free once the last of them released
-- KEYS[2] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- KEYS[3] writers: sorted set of waiting writers' tokens by the time their wait lapses
-- KEYS[4] waiting: sorted set of waiting readers' tokens by the time their wait lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- KEYS[6] fence: the fencing counter of the lock name (see lib/fence.lua)
-- ARGV[1] token: the lease's or the waiter's token
-- ARGV[2] keep: 1 to undo an attempt that did not win a quorum, staying
-- registered as a waiter; 0 to release for good
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[4] left: how long a leaving waiter's ticket stays marked as left, in ms (its TTL)
-- Returns: 1 when the token held the write lock or a live read lease here
-- and gave it up; 0 otherwise.
-- The error reply WRONGTYPE, with nothing written, when the tickets key is
-- no hash and keep is 0.

-- #include lib/grant.lua
-- #include lib/line_head.lua
-- #include lib/wake.lua

if ARGV[2] == '0' then
  checkTickets(KEYS[5]) -- it marks the ticket
end
local now = ticketNow()
local released = letGo(KEYS[1], ARGV[1])
local lapse = redis.call('zscore', KEYS[2], ARGV[1])
if lapse then
  redis.call('zrem', KEYS[2], ARGV[1])
  if tonumber(lapse) > now then
    released = 1
  end
end
if ARGV[2] == '0' then
  leaveForGoodIn(KEYS[5], ARGV[1], ARGV[4], KEYS[3], KEYS[4])
end
purgeLapsed(now, KEYS[2], KEYS[3])
if redis.call('exists', KEYS[1]) == 1 then
  return released
end
local writer = firstWriter(KEYS[3], KEYS[5], now)
if writer ~= nil then
  if writer and writer ~= ARGV[1] and liveReaders(KEYS[2], now) == 0 then
    grant(KEYS[1], KEYS[6], KEYS[5], writer, ARGV[3])
  end
  return released
end
-- UNLINK: a large set is freed off the server's main thread.
if redis.call('unlink', KEYS[4]) == 1 then
  wake(KEYS[4])
end
return released
