-- Tells a waiter's client that a release handed the waiter on: the
-- message is the waiter's ticket key and the fencing token of a grant, or
-- 0 for a wake-up (a reservation, or a lock freed for readers). It goes to
-- the client's own channel, named after the client id that the ticket key
-- holds ("...:t:<client id>:<random>"): an exact channel costs the server
-- one lookup per event, where a pattern per client would cost a match per
-- client on every keyspace event.
local function tell(ticket, fence)
  local id = string.match(ticket, ':t:([^:]+):[^:]*$')
  if id then
    redis.call('publish', 'redlock:client:' .. id, ticket .. ' ' .. fence)
  end
end
