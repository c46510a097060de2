-- Compare-and-delete that also hands the lock on to the oldest waiter,
-- instead of deleting it, so that a release makes no DEL event on the
-- lock key. Native commands cannot do this, so a Notify client releases
-- with this script.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- Returns: 1 when released; 0 when the key is absent or not this holder's.
-- Hands the lock on to the oldest waiter whose ticket is still live, and
-- publishes on the ticket's channel, which only that waiter's client hears.
-- A plain Lock's ticket holds its grant ("g:<ttl>:<token>"): the lock is
-- set to its token at once and the message is the fencing token, so the
-- waiter returns without another request. Any other waiter gets the lock
-- reserved a moment (message 0) and takes it with an attempt. With no one
-- waiting, the lock is deleted. Tickets are left to expire, never deleted:
-- a DEL event would wake their waiters again.
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
        redis.call('publish', head[1], redis.call('incr', fence))
      else
        redis.call('set', lock, 'reserved:' .. head[1], 'PX', reserve)
        redis.call('publish', head[1], 0)
      end
      return
    end
  end
end

if redis.call('type', KEYS[1]).ok ~= 'string' or redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
handOn(KEYS[1], KEYS[2], KEYS[3], ARGV[2])
return 1
