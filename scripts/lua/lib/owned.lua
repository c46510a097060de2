-- A reentrant lock is a hash: field "o" names the owner, and each lease of
-- the owner has a field of its own, "l:<lease>", holding the server time
-- (ms) its hold ends. The key lives as long as its longest-lived lease: a
-- lease's hold is never cut short by another's TTL, and a hold that no
-- lease will release (an attempt that landed after its undo) lasts no
-- longer than its own TTL. The work per call grows with the owner's
-- leases that are held at once.

-- #include lib/now.lua
-- #include lib/lengthen.lua

-- ownedSettle drops the leases whose hold ended and sets the key's expiry
-- to the latest end of the others; it returns how many are left.
local function ownedSettle(lock)
  local now = serverNow()
  local fields = redis.call('hgetall', lock)
  local last, left = 0, 0
  for i = 1, #fields, 2 do
    if string.sub(fields[i], 1, 2) == 'l:' then
      local ends = tonumber(fields[i + 1]) or 0
      if ends <= now then
        redis.call('hdel', lock, fields[i])
      else
        left = left + 1
        last = math.max(last, ends)
      end
    end
  end
  if left > 0 then
    redis.call('pexpireat', lock, string.format('%.0f', last))
  end
  return left
end

-- ownedHolds reports whether lease holds the lock and its hold has not
-- ended.
local function ownedHolds(lock, lease)
  if redis.call('type', lock).ok ~= 'hash' then
    return false
  end
  local ends = tonumber(redis.call('hget', lock, 'l:' .. lease))
  return ends ~= nil and ends > serverNow()
end

-- ownedHold sets lease's hold to end no earlier than ttl ms from now, and
-- the key to live at least as long.
local function ownedHold(lock, lease, ttl)
  local ends = serverNow() + tonumber(ttl)
  local was = tonumber(redis.call('hget', lock, 'l:' .. lease)) or 0
  if was < ends then
    redis.call('hset', lock, 'l:' .. lease, string.format('%.0f', ends))
  end
  lengthen(lock, ttl)
end
