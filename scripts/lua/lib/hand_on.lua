-- Hands the lock on to the oldest waiter whose ticket is still live, and
-- tells that waiter's client (see tell.lua).
-- A plain Lock's ticket holds its grant ("g:<ttl>:<token>"): the lock is
-- set to its token at once and the message is the fencing token, so the
-- waiter returns without another request. A MultiLock waiter's ticket
-- ("m:<names>:<ttl>:<token>", see multi_acquire.lua) is granted this name
-- too, but told 0: it still needs its other names, which its next attempt
-- takes. Any other waiter gets the lock reserved a moment (message 0) and
-- takes it with an attempt. With no one waiting, the lock is deleted.
-- Tickets are left to expire, never deleted: a DEL event would wake their
-- waiters again.

-- #include lib/tell.lua
-- #include lib/live_head.lua

local function handOn(lock, fence, queue, reserve)
  local ticket, value = liveHead(queue)
  if not ticket then
    redis.call('del', lock)
    return
  end
  redis.call('zrem', queue, ticket)
  local ttl, token = string.match(value, '^g:(%d+):(.+)$')
  if token then
    redis.call('set', lock, token, 'PX', ttl)
    tell(ticket, redis.call('incr', fence))
    return
  end
  ttl, token = string.match(value, '^m:%x+:(%d+):(.+)$')
  if token then
    redis.call('set', lock, token, 'PX', ttl)
    redis.call('incr', fence)
  else
    redis.call('set', lock, 'reserved:' .. ticket, 'PX', reserve)
  end
  tell(ticket, 0)
end
