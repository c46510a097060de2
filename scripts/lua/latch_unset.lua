-- Undoes a TrySetCount that did not reach a majority, where it is still
-- the latch's setting, and marks the setting undone, so that a request of
-- it landing later (held back, or a copy) sets nothing (latch_try_set.lua).
-- KEYS[1] latch: a hash {count, gen}
-- KEYS[2] undone: the mark of this setting's undo
-- ARGV[1] gen: the generation of the setting to undo
-- ARGV[2] expiry: how long the mark lives, in ms: at least the setting's expiry
-- Returns: 1 when deleted; 0 when the latch holds another setting or none.
redis.call('set', KEYS[2], '1', 'PX', ARGV[2])
if redis.call('hget', KEYS[1], 'gen') == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
