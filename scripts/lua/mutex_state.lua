-- Reads who holds a Mutex's lock, since when it lasts and how long its
-- line is; it writes nothing.
-- KEYS[1] lock: the holder's token, or an owner's hash {o, l:<lease>...}
-- KEYS[2] fence: the name's fencing counter
-- KEYS[3] queue: the line of waiters' tickets
-- Returns: {holder, owned, holds, ttl, fence, waiting}, in decimal but for
-- holder: the token that holds the lock, or the owner, '' when no one
-- holds it (also while it is reserved for an owner's waiter); owned 1 when
-- holder is an owner; holds the owner's leases whose hold has not ended,
-- 1 for a token, 0 when free; ttl the lock's remaining milliseconds, as
-- PTTL gives them; fence the counter, 0 when it is absent; waiting the
-- number of tickets in the line.

-- #include lib/now.lua
-- #include lib/value.lua

local holder, owned, holds = '', 0, 0
local kind = redis.call('type', KEYS[1]).ok
if kind == 'string' then
  local value = redis.call('get', KEYS[1])
  if string.sub(value, 1, 9) ~= 'reserved:' then
    holder, holds = value, 1
  end
elseif kind == 'hash' then
  local now, owner = serverNow(), ''
  local fields = redis.call('hgetall', KEYS[1])
  for i = 1, #fields, 2 do
    if fields[i] == 'o' then
      owner = fields[i + 1]
    elseif string.sub(fields[i], 1, 2) == 'l:' and (tonumber(fields[i + 1]) or 0) > now then
      holds = holds + 1
    end
  end
  if holds > 0 then
    holder, owned = owner, 1
  end
end
local fence = tonumber(valueOf(KEYS[2]) or '0') or 0
local waiting = redis.pcall('zcard', KEYS[3])
if type(waiting) ~= 'number' then
  waiting = 0
end
return {holder, string.format('%d', owned), string.format('%d', holds),
  string.format('%.0f', redis.call('pttl', KEYS[1])), string.format('%.0f', fence),
  string.format('%d', waiting)}
