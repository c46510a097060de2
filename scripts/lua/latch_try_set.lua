-- Sets a count-down latch's count, only when none is set.
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- ARGV[1] count: the count, above 0
-- ARGV[2] gen: a random generation naming this setting, so that a waiter
-- can tell the latch opened and was set again before it looked
-- ARGV[3] expiry: milliseconds until an abandoned latch is dropped
-- Returns: 1 when set; 0 when a count is set already.
if redis.call('exists', KEYS[1]) == 1 then
  return 0
end
redis.call('hset', KEYS[1], 'count', ARGV[1], 'gen', ARGV[2])
redis.call('pexpire', KEYS[1], ARGV[3])
return 1
