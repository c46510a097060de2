-- Sets a count-down latch's count, only when none is set, and only when
-- this setting was not undone, and did not open, already: a request that
-- lands after the undo of its TrySetCount (held back on the way), or a
-- copy of it that lands after the latch it set opened, sets nothing.
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- KEYS[2] undone: the mark of this setting's undo (see latch_unset.lua)
-- KEYS[3] opened: sorted set of the latch's settings that opened, by the server
-- time (ms) their mark lapses (see lib/opened.lua)
-- ARGV[1] count: the count, above 0
-- ARGV[2] gen: a random generation naming this setting, so that a waiter
-- can tell the latch opened and was set again before it looked
-- ARGV[3] expiry: milliseconds until an abandoned latch is dropped
-- Returns: 1 when set, now or by an earlier copy of this request; 0 when
-- another count is set already, or this setting was undone or opened.
if redis.call('exists', KEYS[1], KEYS[2], KEYS[3]) > 0 then
  if redis.call('type', KEYS[1]).ok == 'hash' and redis.call('hget', KEYS[1], 'gen') == ARGV[2] then
    return 1
  end
  if redis.call('exists', KEYS[1], KEYS[2]) > 0 or redis.call('zscore', KEYS[3], ARGV[2]) then
    return 0
  end
end
redis.call('hset', KEYS[1], 'count', ARGV[1], 'gen', ARGV[2])
redis.call('pexpire', KEYS[1], ARGV[3])
return 1
