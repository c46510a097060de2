-- Counts a latch down by one. The count-down that reaches zero deletes the
-- latch: its del keyspace event wakes the waiters, and the latch can be
-- set again.
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- Returns: the count left; 0 when the latch opened now or had no count.
if redis.call('exists', KEYS[1]) == 0 then
  return 0
end
local left = redis.call('hincrby', KEYS[1], 'count', -1)
if left <= 0 then
  redis.call('del', KEYS[1])
  return 0
end
return left
