-- Counts a latch down by one. The count-down that reaches zero deletes the
-- latch and wakes its waiters (see lib/wake.lua), and the latch can be
-- set again; its setting is marked opened (see lib/opened.lua).
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- KEYS[2] opened: sorted set of the latch's settings that opened, by the server time (ms) their mark lapses
-- ARGV[1] expiry: how long the mark of the opened setting lives, in ms: at least the setting's expiry
-- Returns: the count left; 0 when the latch opened now or had no count.

-- #include lib/opened.lua

if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local left = redis.call('hincrby', KEYS[1], 'count', -1)
if left > 0 then
  return left
end
openLatch(KEYS[1], KEYS[2], ARGV[1])
return 0
