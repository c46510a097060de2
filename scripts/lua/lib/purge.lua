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

-- purgePermits drops up to purgeLimit expired slots of a semaphore
-- (permits scored by expiry, holders mapping each slot to its lease's
-- token and t:<token> to its slots), and returns how many it dropped.
local function purgePermits(permits, holders, now)
  local gone = redis.call('zrangebyscore', permits, '-inf', now, 'LIMIT', 0, purgeLimit)
  for _, s in ipairs(gone) do
    redis.call('hdel', holders, s, 't:' .. (redis.call('hget', holders, s) or ''))
  end
  if #gone > 0 then
    redis.call('zrem', permits, unpack(gone))
  end
  return #gone
end

-- isCount reports whether s is a positive integer in digits, without a
-- leading zero, up to 2^53: what a Lua number holds exactly, and what SET
-- ... PX takes as a TTL.
local function isCount(s)
  return type(s) == 'string' and #s <= 16 and string.match(s, '^[1-9]%d*$') ~= nil and tonumber(s) <= 9007199254740992
end
