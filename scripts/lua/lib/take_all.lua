-- Sets the lock of every name (every step-th key from KEYS[1], with its
-- fencing counter the next key) to token for at least ttl ms, drawing a
-- fencing token for each name not granted to token already (the grant
-- drew it), and raises every name's counter to the highest of them (see
-- fence.lua; idle is how long a counter lives). Returns that highest: the
-- lease's one fencing token, which exceeds every earlier token of every
-- name. counters are the names' fencing counters as readFence read them
-- (by the index of their lock key), before anything was written.

-- #include lib/fence.lua
-- #include lib/lengthen.lua

local function takeAll(step, token, ttl, idle, counters)
  local fence = 0
  for i = 1, #KEYS, step do
    if redis.call('get', KEYS[i]) == token then
      -- Granted before, or an attempt that landed late: never shortened.
      fence = math.max(fence, counters[i] or serverNow() * 1024)
      lengthen(KEYS[i], ttl)
    else
      fence = math.max(fence, drawnFrom(KEYS[i + 1], counters[i], idle))
      redis.call('set', KEYS[i], token, 'PX', ttl)
    end
  end
  for i = 2, #KEYS, step do
    raiseFence(KEYS[i], fence, idle)
  end
  return fence
end
