-- A waiter that left the line (it gave up, or won on other nodes) leaves
-- a mark on its ticket key for a while (the waiter's TTL): an attempt of
-- its that was held back on the way and lands now must neither queue it
-- again nor take the lock for it, or a release would hand the lock to a
-- waiter that is gone. An attempt with a ticket of its own (one that does
-- not wait in line) marks it as it lands: a copy of it, sent twice by a
-- client that retried it or by the network, is then refused when it lands
-- after the lease's release or the holder's; a copy that finds the
-- attempt's token holding the name reports it held, so that the round
-- counts it or undoes it.
local function markLeft(ticket, ms)
  redis.call('set', ticket, 'left', 'PX', ms)
end

local function hasLeft(ticket)
  return redis.call('type', ticket).ok == 'string' and redis.call('get', ticket) == 'left'
end

-- leaveForGood takes token out of its line's sets and marks its ticket as
-- left: also after a release, as the waiter's earlier attempts, which
-- carry the same token, may still land and would take the lock again.
local function leaveForGood(ticket, ms, token, ...)
  for _, set in ipairs({...}) do
    redis.call('zrem', set, token)
  end
  markLeft(ticket, ms)
end
