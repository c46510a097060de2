-- #include lib/marks.lua
-- #include lib/purge.lua

-- The lines of a FairMutex and of an RWMutex's writers hold tokens. A
-- waiter's ticket, and the mark of an attempt (see lib/left.lua), readers'
-- included, is a field of the line's tickets hash (lib/tickets.lua) whose
-- id is the hash's name, ":" and the token (tokenTicket), where tell.lua
-- finds the Client. A waiter's ticket holds the TTL a grant gives it and
-- the secret that keys the grant's MAC ("<ttl>:<secret>", see grant.lua),
-- or 0 for a waiter that would not hear; an owner's waiter's ends in
-- ":<owner>" (see grant.lua).

local function tokenTicket(tickets, token)
  return tickets .. ':' .. token
end

-- lapsedSample is what checkTickets sampled, which the script's first
-- write of a ticket drops.
local lapsedSample

-- checkTickets samples tickets for lapsed fields (lapsedTickets): a script
-- that writes a ticket calls it before its first write of any key, so
-- that over a tickets key of another type it fails (WRONGTYPE) having
-- written nothing.
local function checkTickets(tickets)
  lapsedSample = lapsedTickets(tickets)
end

-- writeTicket makes ticket id hold value for ms, after it drops the
-- fields that checkTickets found lapsed (once, and first: the sample may
-- hold id).
local function writeTicket(tickets, id, value, ms)
  if lapsedSample then
    dropTickets(tickets, lapsedSample)
    lapsedSample = nil
  end
  putTicket(tickets, id, value, ms)
end

-- landedIn is landed (lib/left.lua) on a tickets hash: whether the
-- ticket id is marked; an attempt with a ticket of its own (own) marks it
-- now.
local function landedIn(tickets, id, own, ms)
  if ticketLeft(tickets, id) then
    return true
  end
  if own then
    writeTicket(tickets, id, 'left', ms)
  end
  return false
end

-- leaveForGoodIn is leaveForGood (lib/left.lua) on a tickets hash: it
-- takes token out of its line's sets and marks its ticket as left for ms.
local function leaveForGoodIn(tickets, token, ms, ...)
  for _, set in ipairs({...}) do
    redis.call('zrem', set, token)
  end
  writeTicket(tickets, tokenTicket(tickets, token), 'left', ms)
end

-- grantable reports whether token's ticket in tickets holds what a grant
-- can use (see grant.lua), or nothing (the waiter is granted nothing).
local function grantable(tickets, token)
  local value = ticketIn(tickets, tokenTicket(tickets, token))
  return value == nil or value == '0' or isCount(string.match(value, '^(%d+):%w*$'))
    or isCount(string.match(value, '^(%d+):%w*:.+$'))
end
