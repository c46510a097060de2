-- keyLeft caps ms, how long a lease's entry in key (a hash field, a
-- score) says it holds, at the key's own expiry: the key goes then, and
-- the entry with it. A persistent key caps nothing.
local function keyLeft(key, ms)
  local pttl = redis.call('pttl', key)
  if pttl >= 0 and pttl < ms then
    return pttl
  end
  return ms
end
