-- Undoes a TrySetCount that did not reach a majority, where it is still
-- the latch's setting. Where it is not (it has not landed, or another
-- setting is there), it marks the setting undone for as long as the
-- setting would have lived, so that its request, landing later, sets
-- nothing (latch_try_set.lua).
-- KEYS[1] latch: a hash {count, gen}
-- KEYS[2] undone: the mark of this setting's undo
-- ARGV[1] gen: the generation of the setting to undo
-- ARGV[2] expiry: how long the mark lives, in ms: the setting's expiry
-- Returns: 1 when deleted; 0 when the latch holds another setting or none.
if redis.call('hget', KEYS[1], 'gen') == ARGV[1] then
  return redis.call('del', KEYS[1])
end
redis.call('set', KEYS[2], '1', 'PX', ARGV[2])
return 0
