-- The replies of an exclusive attempt ({acquired, fence, pttl}) that needs
-- no more work: one that landed late or twice, and one whose token holds
-- the lock already.
-- #include lib/left.lua
-- #include lib/fence.lua
-- #include lib/lengthen.lua

-- lateReply is the reply to an attempt whose ticket is marked (see
-- landed), or nil when it is not: a copy of an attempt with a ticket of
-- its own (own) whose token took the lock reports it held; any other is
-- refused (a waiter that left, or an attempt that landed already).
local function lateReply(lock, fence, ticket, token, own, ttl)
  if not landed(ticket, own, ttl) then
    return nil
  end
  if own and redis.call('get', lock) == token then
    return {1, currentFence(fence), 0}
  end
  return {0, 0, 0}
end

-- heldReply is the reply to an attempt whose token holds the lock (a
-- grant, or the attempt landing again), or nil when it does not. The
-- expiry is never shortened: the attempt may land after the lease it
-- belongs to was extended.
local function heldReply(lock, fence, token, ttl)
  if redis.call('get', lock) ~= token then
    return nil
  end
  lengthen(lock, ttl)
  return {1, currentFence(fence), 0}
end
