-- Sets the lock of every name (every step-th key from KEYS[1], with its
-- fencing counter the next key) to token for ttl ms, drawing a fencing
-- token for each name not granted to token already (the grant drew it),
-- and raises every name's counter to the highest of them. Returns that
-- highest: the lease's one fencing token, which exceeds every earlier
-- token of every name.
local function takeAll(step, token, ttl)
  local fence = 0
  for i = 1, #KEYS, step do
    if redis.call('get', KEYS[i]) == token then
      fence = math.max(fence, tonumber(redis.call('get', KEYS[i + 1])))
    else
      fence = math.max(fence, redis.call('incr', KEYS[i + 1]))
    end
    redis.call('set', KEYS[i], token, 'PX', ttl)
  end
  for i = 2, #KEYS, step do
    if tonumber(redis.call('get', KEYS[i])) < fence then
      redis.call('set', KEYS[i], fence)
    end
  end
  return fence
end
