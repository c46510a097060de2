-- Undoes a TrySetCount that did not reach a majority, where it is still
-- the latch's setting.
-- KEYS[1] latch: a hash {count, gen}
-- ARGV[1] gen: the generation of the setting to undo
-- Returns: 1 when deleted; 0 when the latch holds another setting or none.
if redis.call('hget', KEYS[1], 'gen') == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
