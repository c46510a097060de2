-- #include lib/formats.lua
-- #include lib/value.lua

-- A waiter that left the line (it gave up, or won on other nodes) leaves
-- a mark on its ticket key for a while (the waiter's TTL): an attempt of
-- its that was held back on the way and lands now must neither queue it
-- again nor take the lock for it, or a release would hand the lock to a
-- waiter that is gone. An attempt with a ticket of its own (one that does
-- not wait in line) marks it as it lands: a copy of it, sent twice by a
-- client that retried it or by the network, is then refused when it lands
-- after the lease's release or the holder's; a copy that finds the
-- attempt's token holding the name reports it held, so that the round
-- counts it or undoes it. A plain Mutex's attempt does neither on a free
-- name (mutex_acquire.lua): the uncontended path pays no command for it.
local function markLeft(ticket, ms)
  redis.call('set', ticket, 'left', 'PX', ms)
end

-- isMark reports whether a ticket's value (nil for none) is a mark.
local function isMark(value)
  return value == 'left' or value == 'left:id'
end

local function hasLeft(ticket)
  return isMark(valueOf(ticket))
end

-- releasedByID reports the mark of a Semaphore lease's attempt whose
-- permits a release by permit ID gave back ("left:id", which refuses a
-- late attempt as "left" does): the lease's own release and extension
-- then say so.
local function releasedByID(ticket)
  return valueOf(ticket) == 'left:id'
end

-- landed reports whether an attempt's ticket is marked: its waiter left,
-- or it was released or undone, or (for a ticket of its own) a copy of it
-- landed before; it must then not take the name. An attempt with a ticket
-- of its own (own) marks it now: one SET where, as is usual, nothing came
-- before it.
local function landed(ticket, own, ms)
  if own and redis.call('set', ticket, 'left', 'PX', ms, 'NX') then
    return false
  end
  if hasLeft(ticket) then
    return true
  end
  if own then
    markLeft(ticket, ms)
  end
  return false
end

-- keepMark lengthens a mark to last at least ms more, with the lease that
-- an extension lengthens: a copy of the attempt may land any time until
-- the lease's release, which does not mark again where it finds the lease.
local function keepMark(ticket, ms)
  if hasLeft(ticket) and redis.call('pttl', ticket) < tonumber(ms) then
    redis.call('pexpire', ticket, ms)
  end
end
