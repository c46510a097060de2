-- A semaphore's number of permits, and the wake-up of its line when more
-- may fit.

-- #include lib/purge.lua
-- #include lib/ticket_head.lua
-- #include lib/pass_deaf.lua

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

-- dropFrom returns a drop for passDeaf (pass_deaf.lua): it takes a waiter
-- passed over out of queue.
local function dropFrom(queue)
  return function(ticket)
    redis.call('zrem', queue, ticket)
  end
end

-- tellHead tells head, the waiter that lineHead found (none: nil), which
-- may fit now (see semaphore_acquire.lua). One that surely cannot hear
-- leaves the line, and the next is told (see passDeaf in pass_deaf.lua): a
-- waiter that died holds the line up no longer than a release.
local function tellHead(queue, tickets, head, secret)
  if not head then
    return
  end
  passDeaf(function()
    if head then
      local first = head
      head = nil
      return first, secret
    end
    return lineHead(queue, tickets)
  end, function(ticket, s)
    return tell(ticket, 0, s)
  end, dropFrom(queue))
end
