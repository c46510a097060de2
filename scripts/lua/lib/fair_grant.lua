-- Grants a fair lock to the waiter first in line: its token in the lock
-- key for the TTL its ticket holds, and the fencing token published on the
-- ticket's channel, which only its client hears, so that it holds the lock
-- without another request. A waiter whose ticket lapsed gets nothing.
local function grant(lock, fence, tickets, first)
  local ttl = redis.call('get', tickets .. first)
  if ttl then
    redis.call('set', lock, first, 'PX', ttl)
    redis.call('publish', tickets .. first, redis.call('incr', fence))
  end
end
