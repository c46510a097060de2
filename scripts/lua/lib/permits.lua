-- A semaphore's number of permits, and the wake-up of its line when more
-- may fit.

-- #include lib/purge.lua
-- #include lib/live_head.lua
-- #include lib/tell.lua

-- permitsInForce is the number stored at size, or default while none is.
local function permitsInForce(size, default)
  local stored = redis.call('get', size)
  if isCount(stored) then
    return tonumber(stored), stored
  end
  return tonumber(default), stored
end

-- tellHead tells the waiter first in the semaphore's line queue, which
-- may fit now (see semaphore_acquire.lua).
local function tellHead(queue)
  local head, value = liveHead(queue, isSemaphoreTicket)
  if head then
    tell(head, 0, select(2, semaphoreTicket(value)))
  end
end
