-- Compare-and-delete that also hands the lock on: it wakes the oldest
-- waiter whose ticket is still live by deleting that ticket (its client
-- hears the keyspace event) and reserves the lock for it for a moment.
-- Native commands cannot do the second half, so a Notify client releases
-- with this script.
-- KEYS[1] lock: the lock key
-- KEYS[2] queue: sorted set of waiting tickets, by arrival
-- KEYS[3] next: where the woken ticket is recorded
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long the woken waiter has the lock to itself, in ms
-- Returns: 1 when released; 0 when the key is absent or not this holder's.
if redis.call('type', KEYS[1]).ok ~= 'string' or redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('del', KEYS[1])
while true do
  local head = redis.call('zpopmin', KEYS[2])
  if #head == 0 then
    break
  end
  if redis.call('del', head[1]) == 1 then
    redis.call('set', KEYS[3], head[1], 'PX', ARGV[2])
    break
  end
end
return 1
