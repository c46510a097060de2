-- Tells a waiter's client that a release handed the waiter on: the
-- message is "<fence> <secret> <ticket>": the fencing token of a grant, or
-- 0 for a wake-up (a reservation, or a lock freed for readers); the
-- secret, empty for a wake-up; and the waiter's ticket key. A grant
-- also carries the secret that the waiter's last attempt stored in its
-- ticket: the waiter trusts a grant only with the secret of its last
-- attempt, so a grant made before that attempt (delivered late), or a
-- message published by anyone who could not read the ticket, is ignored.
-- It goes to the client's own channel, named after the client id that the
-- ticket key holds ("...:t:<client id>:<random>"): an exact channel costs the server
-- one lookup per event, where a pattern per client would cost a match per
-- client on every keyspace event.

-- #include lib/formats.lua

local function tell(ticket, fence, secret)
  local id = string.match(ticket, ticketInfix .. '([^:]+):[^:]*$')
  if id then
    redis.call('publish', clientChannel .. id, string.format('%.0f %s %s', fence, secret or '', ticket))
  end
end
