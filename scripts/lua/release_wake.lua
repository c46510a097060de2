-- Compare-and-delete that also hands the lock on to the oldest waiter,
-- instead of deleting it, so that a release makes no DEL event on the
-- lock key. Native commands cannot do this, so a Notify client releases
-- with this script.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- Returns: 1 when released; 0 when the key is absent or not this holder's.

-- #include lib/hand_on.lua

if redis.call('type', KEYS[1]).ok ~= 'string' or redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
handOn(KEYS[1], KEYS[2], KEYS[3], ARGV[2], ARGV[3])
return 1
