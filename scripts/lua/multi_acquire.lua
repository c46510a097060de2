-- Acquires every name of a MultiLock at once, or none, where one script
-- may touch all their keys (one server, not a Redis Cluster). Each name is
-- a plain lock as in mutex_acquire.lua. At the first name held by another
-- token it takes nothing and queues the waiter there, and only there: it
-- leaves the other names' queues and hands on any of them granted to it,
-- so that it never holds a name while it waits for another. The waiter's
-- ticket holds its grant with the digest of its names
-- ("m:<names>:<ttl>:<token>"), so that a release of the same names can
-- grant it all of them at once (see multi_release.lua).
-- KEYS[1..] keys: for each name in order, its lock, fence, queue and ticket keys (mutex_acquire.lua's KEYS[1] to KEYS[4])
-- ARGV[1] token: the new holder's token, the same for every attempt of a waiter
-- ARGV[2] ttl: time to live in milliseconds
-- ARGV[3] join: 1 to join the queue of the name held by another on failure, 0 not to
-- ARGV[4] arrival: the waiter's place in that queue (µs since the epoch)
-- ARGV[5] reserve: how long a reserved waiter has a handed-on name to itself, in ms
-- Returns: {1, fence, 0, 0, 0} when acquired (fence: every name's fencing
-- counter now, see lib/take_all.lua); {0, 0, wait, first, at} when not: at
-- is the index (from 0) of the first name held by another token, and wait
-- and first are as in mutex_acquire.lua for that name.

-- #include lib/join.lua
-- #include lib/hand_on.lua
-- #include lib/names_digest.lua
-- #include lib/take_all.lua

local token, ttl = ARGV[1], tonumber(ARGV[2])
local function mine(lock)
  return redis.call('type', lock).ok == 'string' and redis.call('get', lock) == token
end
for i = 1, #KEYS, 4 do
  if redis.call('exists', KEYS[i]) == 1 and not mine(KEYS[i]) then
    for j = 1, #KEYS, 4 do
      if j ~= i then
        redis.call('zrem', KEYS[j + 2], KEYS[j + 3])
        if mine(KEYS[j]) then
          handOn(KEYS[j], KEYS[j + 1], KEYS[j + 2], ARGV[5])
        end
      end
    end
    local wait = redis.call('pttl', KEYS[i])
    local first = 0
    if ARGV[3] == '1' then
      local grant = 'm:' .. namesDigest(4) .. ':' .. ARGV[2] .. ':' .. token
      first = join(KEYS[i + 2], KEYS[i + 3], ARGV[4], grant, wait, ttl)
    end
    return {0, 0, wait, first, (i - 1) / 4}
  end
end
for i = 1, #KEYS, 4 do
  redis.call('zrem', KEYS[i + 2], KEYS[i + 3])
end
return {1, takeAll(4, token, ttl), 0, 0, 0}
