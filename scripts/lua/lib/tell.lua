-- Tells a waiter's client that a release handed the waiter on: the
-- message is "<fence> <mac> <ticket>": the fencing token of a grant, or
-- 0 for a wake-up (a reservation, or a lock freed for readers); the
-- HMAC of "<fence> <ticket>" keyed by the secret that the waiter's last
-- attempt stored in its ticket (see hmac.lua), empty where the ticket
-- holds none (one an earlier version wrote), which the waiter drops; and
-- the waiter's ticket key.
-- The secret itself never leaves the server: a subscriber of the channel
-- reads the message but can neither change its token or ticket nor make
-- another, and the waiter trusts a grant only with the MAC of its last
-- attempt's secret, so a grant made before that attempt (delivered late)
-- is ignored too.
-- On a Redis Cluster a classic PUBLISH goes to every node, so it goes
-- first to the channel of the client's that is sharded with the lock:
-- the ticket key before ":t:", then ":c:" and the client id, in the same
-- slot as the script's keys. When no client is subscribed to that channel
-- on this server (the client has not subscribed it yet, or its slot moved
-- and it subscribes again; a standalone server, where clients do not; a
-- server without SPUBLISH, or a user not allowed it), the message goes to
-- the client's own channel under the key prefix (the ticket key before
-- its first "{"), "<prefix>client:<client id>", "redlock:client:<client
-- id>" by default, which the client subscribes on every node: one of the
-- two always reaches it, never both. A secret that starts with oneServerSecret
-- was stored by a client that knows this node is one server, where it
-- subscribes no sharded channel: the message goes to its own channel
-- alone, with one PUBLISH, whose count of receivers then says whether
-- the waiter's Client still listens: tell returns false when it surely
-- does not (it died, or lost its connection and so the message), true
-- otherwise.

-- #include lib/formats.lua
-- #include lib/hmac.lua

-- clientOf returns the id of the Client whose ticket this is (nil for a
-- key that is not a ticket).
local function clientOf(ticket)
  return string.match(ticket, ticketInfix .. '([^:]+):[^:]*$')
end

local function tell(ticket, fence, secret)
  local stem, id = string.match(ticket, '^(.*)' .. ticketInfix .. '([^:]+):[^:]*$')
  local prefix = string.match(ticket, '^([^{]*){')
  if id and prefix then
    local told = string.format('%.0f', fence)
    local mac = ''
    if secret and secret ~= '' then
      mac = hmac(secret, told .. ' ' .. ticket)
    end
    local message = told .. ' ' .. mac .. ' ' .. ticket
    if string.sub(secret or '', 1, #oneServerSecret) == oneServerSecret then
      return redis.call('publish', prefix .. clientInfix .. id, message) > 0
    end
    local heard = redis.pcall('spublish', stem .. shardInfix .. id, message)
    if type(heard) ~= 'number' or heard == 0 then
      redis.call('publish', prefix .. clientInfix .. id, message)
    end
  end
  return true
end
