-- Reads a latch's count and generation.
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- Returns: {count, gen}; {0, 0} when no count is set.
local v = redis.call('hmget', KEYS[1], 'count', 'gen')
return {tonumber(v[1] or '0'), tonumber(v[2] or '0')}
