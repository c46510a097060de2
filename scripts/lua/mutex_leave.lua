-- Takes a waiter that gives up out of the queue. When the lock was
-- granted or reserved to it meanwhile, it passes on to the next waiter.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] ticket: the leaving waiter's ticket key
-- ARGV[1] token: the token a grant gave the waiter; empty for an owner's waiter
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- Returns: 1 when the lock passed on, 0 otherwise.
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

redis.call('zrem', KEYS[3], KEYS[4])
if redis.call('type', KEYS[1]).ok ~= 'string' then
  return 0
end
local holder = redis.call('get', KEYS[1])
if holder ~= 'reserved:' .. KEYS[4] and (ARGV[1] == '' or holder ~= ARGV[1]) then
  return 0
end
handOn(KEYS[1], KEYS[2], KEYS[3], ARGV[2])
return 1
