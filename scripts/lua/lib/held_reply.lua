-- The replies of an exclusive attempt ({acquired, fence, pttl}) that needs
-- no more work: one that landed late or twice, one whose token holds the
-- lock already, and one that takes the lock free. counter is the fencing
-- counter as readFence read it, before the attempt wrote anything (see
-- fence.lua).
-- #include lib/token_tickets.lua
-- #include lib/fence.lua
-- #include lib/lengthen.lua
-- #include lib/exclusive.lua

-- lateReply is the reply to an attempt whose ticket (a field of tickets,
-- see token_tickets.lua) is marked (see landedIn), or nil when it is not:
-- a copy of an attempt with a ticket of its own (own) whose token took
-- the lock reports it held; any other is refused (a waiter that left, or
-- an attempt that landed already).
local function lateReply(lock, counter, tickets, token, own, ttl)
  if not landedIn(tickets, tokenTicket(tickets, token), own, ttl) then
    return nil
  end
  if own and heldBy(lock, token) then
    return {1, counter or serverNow() * 1024, 0}
  end
  return {0, 0, 0}
end

-- heldReply is the reply to an attempt whose token holds the lock (a
-- grant, or the attempt landing again); when it does not, nil and the
-- lock's PTTL (-2: the lock is free). The expiry is never shortened: the
-- attempt may land after the lease it belongs to was extended.
local function heldReply(lock, counter, token, ttl)
  local held, owned = heldBy(lock, token)
  if not held then
    return nil, redis.call('pttl', lock)
  end
  if owned then
    ownedHold(lock, token, ttl)
  else
    lengthen(lock, ttl)
  end
  return {1, counter or serverNow() * 1024, 0}
end

-- reenterReply is the reply to an owner's attempt (owner "" for none)
-- that finds the lock held by another lease of the owner: token holds it
-- too, at once, with a fencing token drawn afresh, as a reentrant Mutex
-- does; it neither waits in line nor passes anyone. nil when the owner
-- does not hold the lock, or token holds it already (see heldReply).
local function reenterReply(lock, fence, counter, owner, token, ttl, idle)
  if not ownedBy(lock, owner) or ownedHolds(lock, token) then
    return nil
  end
  ownedHold(lock, token, ttl)
  return {1, drawnFrom(fence, counter, idle), 0}
end

-- takeFree takes the free lock for token for ttl ms, for owner ("" for
-- none, see takeFor), and draws its fencing token, which lives idle ms.
local function takeFree(lock, fence, counter, token, ttl, idle, owner)
  takeFor(lock, token, ttl, owner)
  return {1, drawnFrom(fence, counter, idle), 0}
end
