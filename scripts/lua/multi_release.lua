-- Releases every name of a MultiLock lease at once (see multi_acquire.lua):
-- each name that holds the token is handed on to its oldest waiter as
-- release_wake.lua does, or deleted when no one waits.
-- KEYS[1..] keys: for each name in order, its lock, fence and queue keys (release_wake.lua's KEYS)
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- Returns: the number of names that held the token and were released.

-- #include lib/hand_on.lua

local released = 0
for i = 1, #KEYS, 3 do
  if redis.call('type', KEYS[i]).ok == 'string' and redis.call('get', KEYS[i]) == ARGV[1] then
    handOn(KEYS[i], KEYS[i + 1], KEYS[i + 2], ARGV[2])
    released = released + 1
  end
end
return released
