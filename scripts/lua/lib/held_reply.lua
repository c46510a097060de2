-- The replies of an exclusive attempt ({acquired, fence, pttl}) that needs
-- no more work: one that landed late or twice, one whose token holds the
-- lock already, and one that takes the lock free. counter is the fencing
-- counter as readFence read it, before the attempt wrote anything (see
-- fence.lua).
-- #include lib/token_tickets.lua
-- #include lib/fence.lua
-- #include lib/lengthen.lua

-- lateReply is the reply to an attempt whose ticket (a field of tickets,
-- see token_tickets.lua) is marked (see landedIn), or nil when it is not:
-- a copy of an attempt with a ticket of its own (own) whose token took
-- the lock reports it held; any other is refused (a waiter that left, or
-- an attempt that landed already).
local function lateReply(lock, counter, tickets, token, own, ttl)
  if not landedIn(tickets, tokenTicket(tickets, token), own, ttl) then
    return nil
  end
  if own and redis.call('get', lock) == token then
    return {1, counter or serverNow() * 1024, 0}
  end
  return {0, 0, 0}
end

-- heldReply is the reply to an attempt whose token holds the lock (a
-- grant, or the attempt landing again); when it does not, nil and the
-- lock's PTTL (-2: the lock is free). The expiry is never shortened: the
-- attempt may land after the lease it belongs to was extended.
local function heldReply(lock, counter, token, ttl)
  if redis.call('get', lock) ~= token then
    return nil, redis.call('pttl', lock)
  end
  lengthen(lock, ttl)
  return {1, counter or serverNow() * 1024, 0}
end

-- takeFree takes the free lock for token for ttl ms and draws its fencing
-- token, which lives idle ms.
local function takeFree(lock, fence, counter, token, ttl, idle)
  redis.call('set', lock, token, 'PX', ttl)
  return {1, drawnFrom(fence, counter, idle), 0}
end
