-- A semaphore's number of permits, and the wake-up of its line when more
-- may fit.

-- #include lib/purge.lua
-- #include lib/ticket_head.lua
-- #include lib/tell.lua

-- permitsInForce is the number stored at size, or default while none is.
local function permitsInForce(size, default)
  local stored = redis.call('get', size)
  if isCount(stored) then
    return tonumber(stored), stored
  end
  return tonumber(default), stored
end

-- lineHead returns the waiter first in the semaphore's line queue (its
-- ticket id, a field of tickets) and the secret of its wake-ups; nil when
-- no one waits. A script calls it before its first write: on a line of
-- another type it fails having written nothing.
local function lineHead(queue, tickets)
  local head, value = liveHeadIn(queue, tickets, isSemaphoreTicket)
  if head then
    return head, select(2, semaphoreTicket(value))
  end
  return nil
end

-- tellHead tells the waiter that lineHead found, which may fit now (see
-- semaphore_acquire.lua).
local function tellHead(head, secret)
  if head then
    tell(head, 0, secret)
  end
end
