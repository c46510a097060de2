-- Acquires a plain (non-reentrant) lock and draws a fencing token. A waiter
-- that fails joins the lock's queue with a ticket key holding its grant
-- (its token and TTL): a release sets the lock to that token and tells the
-- waiter's client the fencing token (see lib/hand_on.lua), so nobody
-- barges in and the waiter needs no further request.
-- KEYS[1] lock: the lock key: the holder's token, or "reserved:<ticket>"
-- KEYS[2] fence: the fencing counter of the lock name; it never expires
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] ticket: this waiter's ticket key
-- ARGV[1] token: the new holder's token, the same for every attempt of a waiter
-- ARGV[2] ttl: time to live in milliseconds
-- ARGV[3] join: 1 to join the queue on failure, 0 not to
-- ARGV[4] arrival: the waiter's place in the queue (µs since the epoch)
-- Returns: {1, fence, 0, 0} when acquired (or granted to token before: the
-- TTL starts again); {0, 0, wait, first} when not (wait: how long the lock
-- stays taken or reserved in ms, -1 when it has no expiry; first: 1 when
-- the waiter is now at the head of the queue).

-- #include lib/join.lua

local kind = redis.call('type', KEYS[1]).ok
local granted = kind == 'string' and redis.call('get', KEYS[1]) == ARGV[1]
if kind == 'none' or granted then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  redis.call('zrem', KEYS[3], KEYS[4])
  if granted then
    return {1, tonumber(redis.call('get', KEYS[2])), 0, 0}
  end
  return {1, redis.call('incr', KEYS[2]), 0, 0}
end
local wait = redis.call('pttl', KEYS[1])
local first = 0
if ARGV[3] == '1' then
  first = join(KEYS[3], KEYS[4], ARGV[4], 'g:' .. ARGV[2] .. ':' .. ARGV[1], wait, tonumber(ARGV[2]))
end
return {0, 0, wait, first}
