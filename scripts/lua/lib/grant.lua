-- Grants an exclusive lock (a FairMutex's, an RWMutex's write lock) to a
-- waiting token: the token in the lock key for the TTL its ticket (a
-- field of the line's tickets hash, see token_tickets.lua) holds
-- ("<ttl>:<secret>", and ":<owner>" for an owner's waiter, whose grant
-- makes the lock the owner's hash: see lib/exclusive.lua), and the fencing token told to its client with a
-- MAC by the secret (see tell.lua), so that it holds the lock without another
-- request. A waiter whose ticket lapsed, or holds 0 (it would not hear),
-- gets nothing. Where the fencing counter is malformed, the lock stays
-- free and the waiter is woken (told 0): its attempt reports the counter.

-- #include lib/tell.lua
-- #include lib/fence.lua
-- #include lib/token_tickets.lua
-- #include lib/exclusive.lua

local function grant(lock, fence, tickets, token, idle)
  local ticket = tokenTicket(tickets, token)
  local value = ticketIn(tickets, ticket) or ''
  local ttl, secret, owner = string.match(value, '^(%d+):(%w*)$')
  if not ttl then
    ttl, secret, owner = string.match(value, '^(%d+):(%w*):(.+)$')
  end
  if ttl and tonumber(ttl) > 0 then
    local drawn, bad = drawFence(fence, idle)
    if bad then
      tell(ticket, 0, secret)
      return
    end
    takeFor(lock, token, ttl, owner or '')
    tell(ticket, drawn, secret)
  end
end
