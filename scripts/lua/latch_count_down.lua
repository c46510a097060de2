-- Counts a latch down by one, once per call: the call's mark refuses a
-- copy of its request. The count-down that reaches zero deletes the latch
-- and wakes its waiters (see lib/wake.lua), and the latch can be set
-- again; its setting is marked opened (see lib/opened.lua).
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- KEYS[2] opened: sorted set of the latch's settings that opened, by the server time (ms) their mark lapses
-- KEYS[3] call: the mark of this call, set where it ran, a count set or not
-- ARGV[1] expiry: how long the mark of the opened setting, and the
-- call's mark, live, in ms: at least the setting's expiry
-- Returns: the count left, also to a copy of a call that ran (writing
-- nothing); 0 when the latch opened now or had no count.

-- #include lib/opened.lua

-- The mark is written after the count, so that a count that is not one
-- (written by another program) fails the call with nothing written.
if redis.call('exists', KEYS[3]) == 1 then
  return tonumber(redis.call('hget', KEYS[1], 'count')) or 0
end
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[3], '1', 'PX', ARGV[1])
  return 0
end
local left = redis.call('hincrby', KEYS[1], 'count', -1)
redis.call('set', KEYS[3], '1', 'PX', ARGV[1])
if left > 0 then
  return left
end
openLatch(KEYS[1], KEYS[2], ARGV[1])
return 0
