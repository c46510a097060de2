-- Hands the lock on to the oldest waiter whose ticket is still live, and
-- tells that waiter's client (see tell.lua).
-- A plain Lock's ticket holds its grant ("g:<ttl>:<token>"): the lock is
-- set to its token at once and the message is the fencing token, so the
-- waiter returns without another request. Any other waiter gets the lock
-- reserved a moment (message 0) and takes it with an attempt. With no one
-- waiting, the lock is deleted. Tickets are left to expire, never deleted:
-- a DEL event would wake their waiters again.

-- #include lib/tell.lua

local function handOn(lock, fence, queue, reserve)
  while true do
    local head = redis.call('zpopmin', queue)
    if #head == 0 then
      redis.call('del', lock)
      return
    end
    local ticket = redis.call('get', head[1])
    if ticket then
      local ttl, token = string.match(ticket, '^g:(%d+):(.+)$')
      if token then
        redis.call('set', lock, token, 'PX', ttl)
        tell(head[1], redis.call('incr', fence))
      else
        redis.call('set', lock, 'reserved:' .. head[1], 'PX', reserve)
        tell(head[1], 0)
      end
      return
    end
  end
end
