-- Acquires a plain (non-reentrant) lock and draws a fencing token. A waiter
-- that fails joins the lock's queue with a ticket key: a release deletes
-- the ticket of the queue's head, whose client hears the keyspace event,
-- and reserves the lock for it a moment so that no one barges in first.
-- KEYS[1] lock: the lock key, a string holding the holder's token
-- KEYS[2] fence: the fencing counter of the lock name; it never expires
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] next: the ticket a release woke; only it may take the lock while this lives
-- KEYS[5] ticket: this waiter's ticket key
-- ARGV[1] token: the new holder's random token
-- ARGV[2] ttl: time to live in milliseconds
-- ARGV[3] join: 1 to join the queue on failure, 0 not to
-- ARGV[4] arrival: the waiter's place in the queue (µs since the epoch)
-- Returns: {1, fence, 0, 0} when acquired; {0, 0, wait, first} when not (wait:
-- how long the lock stays taken or reserved in ms, -1 when it has no expiry;
-- first: 1 when the waiter is now at the head of the queue).
local next = redis.call('get', KEYS[4])
if (not next or next == KEYS[5]) and redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  if next then
    redis.call('del', KEYS[4])
  end
  redis.call('zrem', KEYS[3], KEYS[5])
  redis.call('del', KEYS[5])
  return {1, redis.call('incr', KEYS[2]), 0, 0}
end
local wait = redis.call('pttl', KEYS[1])
if wait == -2 then
  wait = redis.call('pttl', KEYS[4])
end
local first = false
if ARGV[3] == '1' then
  -- The ticket expires with the lock (or the reservation), which wakes the
  -- waiter when a holder dies without releasing.
  local life = wait
  if life < 0 then
    life = tonumber(ARGV[2])
  end
  redis.call('zadd', KEYS[3], 'NX', ARGV[4], KEYS[5])
  first = redis.call('zrank', KEYS[3], KEYS[5]) == 0
  redis.call('set', KEYS[5], 1, 'PX', life + 1)
  if redis.call('pttl', KEYS[3]) < life + tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[3], life + tonumber(ARGV[2]))
  end
end
if first then
  return {0, 0, wait, 1}
end
return {0, 0, wait, 0}
