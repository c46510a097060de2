-- Acquires a reentrant lock for an owner, counting holds per owner the way
-- Redisson's lock does, and draws a fencing token on every acquisition. A
-- waiter that fails joins the lock's queue as in mutex_acquire.lua.
-- KEYS[1] lock: the lock key: a hash from the owner to its hold count, or "reserved:<ticket>"
-- KEYS[2] fence: the fencing counter of the lock name; it never expires
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] ticket: this waiter's ticket key
-- ARGV[1] owner: the owner identity
-- ARGV[2] ttl: time to live in milliseconds; a re-entry never shortens it
-- ARGV[3] join: 1 to join the queue on failure, 0 not to
-- ARGV[4] arrival: the waiter's place in the queue (µs since the epoch)
-- Returns: {1, fence, 0, 0} when acquired or re-entered; {0, 0, wait, first}
-- when not (wait: how long the lock stays taken or reserved in ms, -1 without
-- expiry; first: 1 when the waiter is now at the head of the queue).

-- #include lib/join.lua

local kind = redis.call('type', KEYS[1]).ok
local reserved = kind == 'string' and redis.call('get', KEYS[1]) == 'reserved:' .. KEYS[4]
if reserved then
  redis.call('del', KEYS[1])
  kind = 'none'
end
if kind == 'none' or (kind == 'hash' and redis.call('hexists', KEYS[1], ARGV[1]) == 1) then
  redis.call('hincrby', KEYS[1], ARGV[1], 1)
  if redis.call('pttl', KEYS[1]) < tonumber(ARGV[2]) then
    redis.call('pexpire', KEYS[1], ARGV[2])
  end
  redis.call('zrem', KEYS[3], KEYS[4])
  return {1, redis.call('incr', KEYS[2]), 0, 0}
end
local wait = redis.call('pttl', KEYS[1])
local first = 0
if ARGV[3] == '1' then
  first = join(KEYS[3], KEYS[4], ARGV[4], 1, wait, tonumber(ARGV[2]))
end
return {0, 0, wait, first}
