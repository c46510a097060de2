-- A latch that opens (counted down to zero, or deleted) marks its setting
-- opened in a sorted set of the latch's opened settings, scored by the
-- server time (ms) the mark lapses: a copy of the setting's TrySetCount
-- that lands later then sets nothing (latch_try_set.lua). The set is
-- declared in KEYS as it is one key per latch, not per setting.

-- #include lib/now.lua
-- #include lib/purge.lua
-- #include lib/wake.lua

-- openLatch deletes latch, wakes its waiters (see wake.lua) and marks its
-- setting opened for ms; it returns what DEL returns.
local function openLatch(latch, opened, ms)
  local gen = redis.call('type', latch).ok == 'hash' and redis.call('hget', latch, 'gen')
  local deleted = redis.call('del', latch)
  if deleted == 1 then
    wake(latch)
  end
  if gen then
    local now = serverNow()
    purgeLapsed(now, opened)
    redis.call('zadd', opened, now + tonumber(ms), gen)
    if redis.call('pttl', opened) < tonumber(ms) then
      redis.call('pexpire', opened, ms)
    end
  end
  return deleted
end
