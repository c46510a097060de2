-- #include lib/purge.lua
-- #include lib/token_tickets.lua

-- The lines of a FairMutex and of an RWMutex's writers hold tokens, whose
-- tickets are fields of the line's tickets hash (lib/token_tickets.lua);
-- a grant (lib/grant.lua) sets the lock for the TTL the ticket holds. A
-- member whose ticket holds anything else (a mark, or what no waiter
-- writes), or whose place lapsed, is dead.

-- purgeLine drops up to purgeLimit lapsed members from a FairMutex's
-- line (queue, by place) and from its lapse times (lapse).
local function purgeLine(queue, lapse, now)
  local gone = redis.call('zrangebyscore', lapse, '-inf', now, 'LIMIT', 0, purgeLimit)
  if #gone > 0 then
    redis.call('zrem', queue, unpack(gone))
    redis.call('zrem', lapse, unpack(gone))
  end
end

-- fairHead returns the token first in a FairMutex's line whose place has
-- not lapsed, dropping the dead ones before it (a member without a lapse
-- time, as an eviction of the lapse set leaves it, is dead): nil when no
-- one waits, false when it dropped purgeLimit and found no live one yet.
-- With no live lapse time every member is dead, so the line goes at once
-- (UNLINK frees a long one off the main thread).
local function fairHead(queue, lapse, tickets, now)
  if redis.call('zcount', lapse, '(' .. now, '+inf') == 0 then
    redis.call('unlink', queue)
    return nil
  end
  return firstAlive(byRank(queue), function(member)
    local lapses = redis.call('zscore', lapse, member)
    return lapses and tonumber(lapses) > now and grantable(tickets, member)
  end, queue, lapse)
end

-- firstWriter returns the RWMutex's waiting writer (writers, by lapse
-- time) whose wait lapses first and has not, dropping those before it
-- whose tickets are malformed: nil when no writer waits, false when it
-- dropped purgeLimit and found none live yet.
local function firstWriter(writers, tickets, now)
  local fetch = function(offset, count)
    return redis.call('zrangebyscore', writers, '(' .. now, '+inf', 'LIMIT', offset, count)
  end
  return firstAlive(fetch, function(writer)
    return grantable(tickets, writer)
  end, writers)
end

-- liveReaders counts the read leases that have not lapsed.
local function liveReaders(readers, now)
  return redis.call('zcount', readers, '(' .. now, '+inf')
end
