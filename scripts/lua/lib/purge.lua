-- One script call blocks its server, so a call drops at most purgeLimit
-- dead entries (lapsed waiters, expired permits, tickets that are gone or
-- malformed) and leaves the rest to later calls; what it reads treats
-- those left as dead all the same.
local purgeLimit = 100

-- purgeLapsed drops, from each sorted set key given, up to purgeLimit
-- members whose score (a lapse time in server ms) is at most now: the
-- lowest ranks.
local function purgeLapsed(now, ...)
  for _, k in ipairs({...}) do
    local n = math.min(redis.call('zcount', k, '-inf', now), purgeLimit)
    if n > 0 then
      redis.call('zremrangebyrank', k, 0, n - 1)
    end
  end
end

-- byRank is the fetch of firstAlive over key's members by rank.
local function byRank(key)
  return function(offset, count)
    return redis.call('zrange', key, offset, offset + count - 1)
  end
end

-- firstAlive walks a sorted set's lowest ranks in order, at most
-- purgeLimit of them, until alive(member) accepts one; fetch(offset,
-- count) reads count members from rank offset. It reads the first member
-- alone, as a live head is the common case, and the rest of purgeLimit
-- only when that one is dead. It removes from each key given the members
-- it passed, which are dead, and returns the live member; nil when the
-- members ran out (no one is left); false when all purgeLimit were dead
-- (a later call goes on).
local function firstAlive(fetch, alive, ...)
  local dead, live, read = {}, nil, 0
  for _, count in ipairs({1, purgeLimit - 1}) do
    local members = fetch(read, count)
    read = read + #members
    for _, m in ipairs(members) do
      if alive(m) then
        live = m
        break
      end
      dead[#dead + 1] = m
    end
    if live or #members < count then
      break
    end
  end
  if #dead > 0 then
    for _, k in ipairs({...}) do
      redis.call('zrem', k, unpack(dead))
    end
  end
  if live or read < purgeLimit then
    return live
  end
  return false
end

-- purgePermits drops up to purgeLimit expired slots of a semaphore
-- (permits scored by expiry, holders mapping each slot to its lease's
-- token and t:<token> to its slots), and returns how many it dropped.
local function purgePermits(permits, holders, now)
  local gone = redis.call('zrangebyscore', permits, '-inf', now, 'LIMIT', 0, purgeLimit)
  if #gone == 0 then
    return 0
  end
  local fields = {}
  for i, token in ipairs(redis.call('hmget', holders, unpack(gone))) do
    fields[#fields + 1] = gone[i]
    if token then
      fields[#fields + 1] = 't:' .. token
    end
  end
  redis.call('hdel', holders, unpack(fields))
  redis.call('zrem', permits, unpack(gone))
  return #gone
end

-- isCount reports whether s is a positive integer in digits, without a
-- leading zero, up to 2^53: what a Lua number holds exactly, and what SET
-- ... PX takes as a TTL.
local function isCount(s)
  return type(s) == 'string' and #s <= 16 and string.match(s, '^[1-9]%d*$') ~= nil and tonumber(s) <= 9007199254740992
end
