-- Grants an exclusive lock (a FairMutex's, an RWMutex's write lock) to a
-- waiting token: the token in the lock key for the TTL its ticket holds,
-- and the fencing token told to its client (see tell.lua), so that it
-- holds the lock without another request. A waiter whose ticket lapsed,
-- or holds 0 (it would not hear), gets nothing.

-- #include lib/tell.lua

local function grant(lock, fence, tickets, token)
  local ttl = tonumber(redis.call('get', tickets .. token))
  if ttl and ttl > 0 then
    redis.call('set', lock, token, 'PX', ttl)
    tell(tickets .. token, redis.call('incr', fence))
  end
end
