-- Turns a write lease into a read lease of the same token, at once, so
-- that no other writer takes the lock between the two. It writes nothing
-- unless the token holds the write lock. Waiting writers stay waiting (the
-- read lease holds them up until its release); with none waiting, it wakes
-- every waiting reader as a writer's release does (see rw_release.lua). It
-- takes the writer out of the writers' line and marks its ticket as left,
-- so that an attempt of its that lands later does not queue it again.
-- KEYS[1] writer: the write lock, a string holding the writer's token, or
-- the owner's hash of its write leases' tokens (see lib/exclusive.lua)
-- KEYS[2] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- KEYS[3] writers: sorted set of waiting writers' tokens by the time their wait lapses
-- KEYS[4] waiting: sorted set of waiting readers' tokens by the time their wait lapses
-- KEYS[5] tickets: hash of the line's tickets, the waiters' and the attempts' marks, by
-- "<tickets>:<token>" (see lib/token_tickets.lua)
-- ARGV[1] token: the write lease's token, which the read lease keeps
-- ARGV[2] ttl: the read lease's time to live in milliseconds; also how
-- long the writer's ticket stays marked as left
-- Returns: 1 when the token held the write lock here and now holds a read
-- lease; 0 when it did not (nothing written).
-- The error reply WRONGTYPE, with nothing written, when the tickets key is
-- no hash.

-- #include lib/line_head.lua
-- #include lib/exclusive.lua
-- #include lib/lengthen.lua
-- #include lib/wake.lua

if not heldBy(KEYS[1], ARGV[1]) then
  return 0
end
checkTickets(KEYS[5])
local now = ticketNow()
local ttl = tonumber(ARGV[2])
letGo(KEYS[1], ARGV[1])
purgeLapsed(now, KEYS[2], KEYS[3])
redis.call('zadd', KEYS[2], now + ttl, ARGV[1])
lengthen(KEYS[2], ttl)
leaveForGoodIn(KEYS[5], ARGV[1], ttl, KEYS[3])
-- Readers wait on while other leases of an owner hold the write lock.
if redis.call('exists', KEYS[1]) == 0 and firstWriter(KEYS[3], KEYS[5], now) == nil and redis.call('unlink', KEYS[4]) == 1 then
  wake(KEYS[4])
end
return 1
