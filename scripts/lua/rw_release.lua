-- Gives up a read or write lease, or a wait, and hands on to who may go
-- next when the lock is free: it grants the lock to a waiting writer once
-- no reader is left (see lib/grant.lua), or else wakes every waiting
-- reader (see lib/tell.lua). A waiter's own ticket is left to expire: only
-- its entry in line makes a release look at it.
-- KEYS[1] writer: the write lock, a string holding the writer's token
-- KEYS[2] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- KEYS[3] writers: sorted set of waiting writers' tokens by the time their wait lapses
-- KEYS[4] waiting: sorted set of waiting readers' tokens by the time their wait lapses
-- KEYS[5] tickets: the prefix of the ticket keys; a waiter's is this and its token
-- KEYS[6] fence: the fencing counter of the lock name; it never expires
-- ARGV[1] token: the lease's or the waiter's token
-- ARGV[2] keep: 1 to undo an attempt that did not win a quorum, staying
-- registered as a waiter; 0 to release for good
-- Returns: 1 when the token held the write lock or a live read lease here
-- and gave it up; 0 otherwise.

-- #include lib/grant.lua

local time = redis.call('time')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local released = 0
if redis.call('type', KEYS[1]).ok == 'string' and redis.call('get', KEYS[1]) == ARGV[1] then
  released = redis.call('del', KEYS[1])
end
local lapse = redis.call('zscore', KEYS[2], ARGV[1])
if lapse then
  redis.call('zrem', KEYS[2], ARGV[1])
  if tonumber(lapse) > now then
    released = 1
  end
end
if ARGV[2] == '0' then
  redis.call('zrem', KEYS[3], ARGV[1])
  redis.call('zrem', KEYS[4], ARGV[1])
end
redis.call('zremrangebyscore', KEYS[2], '-inf', now)
redis.call('zremrangebyscore', KEYS[3], '-inf', now)
redis.call('zremrangebyscore', KEYS[4], '-inf', now)
if redis.call('exists', KEYS[1]) == 1 then
  return released
end
local writer = redis.call('zrange', KEYS[3], 0, 0)[1]
if writer then
  if writer ~= ARGV[1] and redis.call('exists', KEYS[2]) == 0 then
    grant(KEYS[1], KEYS[6], KEYS[5], writer)
  end
  return released
end
for _, reader in ipairs(redis.call('zrange', KEYS[4], 0, -1)) do
  tell(KEYS[5] .. reader, 0)
end
return released
