-- Takes a waiter that gives up out of the queue. When the lock was
-- reserved for it and is free, the reservation passes to the next waiter.
-- KEYS[1] lock: the lock key
-- KEYS[2] queue: sorted set of waiting tickets, by arrival
-- KEYS[3] next: the ticket a release woke
-- KEYS[4] ticket: the leaving waiter's ticket key
-- ARGV[1] reserve: how long the next waiter has the lock to itself, in ms
-- Returns: 1 when the reservation passed on or lapsed, 0 otherwise.
redis.call('zrem', KEYS[2], KEYS[4])
redis.call('del', KEYS[4])
if redis.call('get', KEYS[3]) ~= KEYS[4] then
  return 0
end
redis.call('del', KEYS[3])
if redis.call('exists', KEYS[1]) == 1 then
  return 1
end
while true do
  local head = redis.call('zpopmin', KEYS[2])
  if #head == 0 then
    break
  end
  if redis.call('del', head[1]) == 1 then
    redis.call('set', KEYS[3], head[1], 'PX', ARGV[1])
    break
  end
end
return 1
