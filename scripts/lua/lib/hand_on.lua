-- Hands the lock on to the oldest waiter whose ticket is still live, and
-- tells that waiter's client (see tell.lua).
-- A plain Lock's ticket holds its grant ("g:<ttl>:<token>:<secret>"): the
-- lock is set to its token at once and the message is the fencing token
-- with its MAC, so the waiter returns without another request. A
-- MultiLock waiter's ticket ("m:<names>:<ttl>:<token>:<secret>", see
-- multi_acquire.lua) is granted this name too, but told 0: it still needs
-- its other names, which its next attempt takes (the message has a MAC
-- too). Any other waiter (an owner's, "o:<secret>") gets the lock
-- reserved a moment (message 0) and takes it with an attempt. With no
-- one waiting, the lock is deleted. A grant draws the fencing token with
-- fence.lua (idle: how long the counter lives). Where the counter is
-- malformed, the release still frees the lock: it deletes it and wakes
-- the waiter, which stays first in line and whose attempt reports the
-- counter. A waiter that surely cannot hear (tell.lua: on a node that is
-- one server, its Client no longer listens) is passed over, and so are
-- the other tickets of its Client (a process that died waiting with
-- several goroutines): the lock goes to the next at once, rather than to
-- a waiter that died for its TTL (see passDeaf in pass_deaf.lua); past
-- its limits the lock is deleted. popped, when given, is the reply of the
-- ZPOPMIN of the queue that the caller made already (a waiter, popped out
-- of line), which the first look at the line takes instead of its own.

-- #include lib/pass_deaf.lua
-- #include lib/ticket_head.lua
-- #include lib/fence.lua

local function handOn(lock, fence, queue, tickets, reserve, idle, popped)
  local handed = passDeaf(function()
    local ticket, value, place = popLiveHeadIn(queue, tickets, popped)
    popped = nil
    return ticket, value, place
  end, function(ticket, value, place)
    local ttl, token, secret = string.match(value, '^g:(%d+):(%w+):(%w+)$')
    local told = true
    if not token then
      ttl, token, secret = string.match(value, '^m:%x+:(%d+):(%w+):(%w+)$')
      told = false
    end
    local drawn = 0
    if token then
      -- One INCR draws the token; a malformed counter is left as it was.
      local bad
      drawn, bad = drawFence(fence, idle)
      if bad then
        -- The waiter stays first in line, as long as its ticket lives.
        local _, deadline = ticketIn(tickets, ticket)
        redis.call('zadd', queue, place, ticket)
        redis.call('pexpire', queue, deadline - ticketNow() + ttl, 'NX')
        redis.call('del', lock)
        tell(ticket, 0, secret)
        return true
      end
    else
      secret = string.match(value, '^o:(%w+)$')
    end
    -- The script runs whole: the waiter acts on the message only after
    -- the lock below is set.
    if not tell(ticket, told and drawn or 0, secret) then
      return false
    end
    if token then
      -- The ticket names the grant's token as long as the grant lasts,
      -- for a waiter that rotated its token to take it over
      -- (mutex_acquire.lua), with no write: it is read ttl past its
      -- deadline (see ticketEnd in tickets.lua), and the waiter's join
      -- made the tickets hash outlive it by ttl.
      redis.call('set', lock, token, 'PX', ttl)
    else
      redis.call('set', lock, 'reserved:' .. ticket, 'PX', reserve)
    end
    return true
  end)
  if not handed then
    redis.call('del', lock)
  end
end
