-- Reads a latch's count, generation and remaining time.
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- Returns: {count, gen, ttl}; {0, 0, -2} when no count is set (ttl: the
-- latch's remaining milliseconds, as PTTL gives them).
local v = redis.call('hmget', KEYS[1], 'count', 'gen')
return {tonumber(v[1] or '0'), tonumber(v[2] or '0'), redis.call('pttl', KEYS[1])}
