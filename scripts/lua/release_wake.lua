-- Compare-and-delete that also hands the lock on: it wakes the oldest
-- waiter whose ticket is still live by deleting that ticket (its client
-- hears the keyspace event) and leaves the lock reserved for it for a
-- moment, instead of deleting it, so that a release makes no DEL event on
-- the lock key. Native commands cannot do this, so a Notify client
-- releases with this script.
-- KEYS[1] lock: the lock key
-- KEYS[2] queue: sorted set of waiting tickets, by arrival
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long the woken waiter has the lock to itself, in ms
-- Returns: 1 when released; 0 when the key is absent or not this holder's.
if redis.call('type', KEYS[1]).ok ~= 'string' or redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
local reserve = ARGV[2]
local woke = false
while true do
  local head = redis.call('zpopmin', KEYS[2])
  if #head == 0 then
    break
  end
  if redis.call('del', head[1]) == 1 then
    redis.call('set', KEYS[1], 'reserved:' .. head[1], 'PX', reserve)
    woke = true
    break
  end
end
if not woke then
  redis.call('del', KEYS[1])
end
return 1
