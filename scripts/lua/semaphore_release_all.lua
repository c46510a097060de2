-- Gives back the permits of several semaphore leases, named by permit ID,
-- all or none: where any of them does not hold all its permits here
-- (they expired, or were released), it gives back none and names them.
-- It still marks there the attempt of each lease it names, as
-- semaphore_release.lua does where it finds nothing (see lib/left.lua),
-- so that one held back on the way is refused when it lands rather than
-- hold permits for its TTL; it does not mark the leases that hold here,
-- whose permits stay, and whose holders' Extend must not report them
-- given back. Where it gives them back, it marks each lease's attempt
-- "left:id", as semaphore_release.lua does for a release by permit ID, so
-- that each lease's Extend and Unlock report it, and then tells the
-- waiter first in line.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] queue: sorted set of waiting tickets (their ids), by place
-- KEYS[4] tickets: hash of the line's tickets (see lib/tickets.lua)
-- KEYS[5] call: the mark of this call, set where it gave the permits
-- back, so that a copy of its request (sent again after a lost reply)
-- answers as it did, writing nothing
-- KEYS[6..] marks: each lease's attempt's mark, in the order of holds
-- ARGV[1] holds: for each lease, "<token>:<n>:<ttl ms>" (from its permit
-- ID: its token, how many permits it holds, and how long its mark stays),
-- separated by spaces
-- Returns: {"1"} when every lease held all its permits, now free (or the
-- call's mark says that it gave them back); else
-- {"0", i...}, with no permit given back and only those leases' marks
-- written: the positions (from 1) of the leases that did not hold;
-- {"-1"}, with nothing written, when holds is malformed (a hold that is
-- not of that form, a token given twice, or not one hold per mark).
-- WRONGTYPE, with nothing written, when the permits, the holders, the
-- line or the tickets are of another type.

-- #include lib/permits.lua
-- #include lib/now.lua
-- #include lib/left.lua

local holds, seen = {}, {}
for token, n, ttl in string.gmatch(ARGV[1], '(%w+):(%d+):(%d+)') do
  if seen[token] or not isCount(n) or not isCount(ttl) then
    return {'-1'}
  end
  seen[token] = true
  holds[#holds + 1] = {token = token, n = tonumber(n), ttl = ttl}
end
if #holds == 0 or #holds ~= #KEYS - 5 or select(2, string.gsub(ARGV[1], '%S+', '')) ~= #holds then
  return {'-1'}
end
if redis.call('exists', KEYS[5]) == 1 then
  return {'1'}
end
local now = serverNow()
-- The reads that fail on slots, tickets or a line of another type come
-- before the first write, a refusal's marks included: lineHead reads the
-- tickets leniently.
redis.call('zcard', KEYS[1])
redis.call('hlen', KEYS[2])
redis.call('zcard', KEYS[3])
redis.call('hlen', KEYS[4])
-- Each lease's own live slots, read first: a lease holds here when all
-- n of them are live.
local missing = {'0'}
for i, h in ipairs(holds) do
  local slots, listed, held = {}, {}, 0
  local list = redis.call('hget', KEYS[2], 't:' .. h.token)
  for s in string.gmatch(list or '', '%d+') do
    if #slots == h.n then -- not a list this lease wrote
      break
    end
    if not listed[s] then
      listed[s] = true
      slots[#slots + 1] = s
    end
  end
  if #slots > 0 then
    local owners = redis.call('hmget', KEYS[2], unpack(slots))
    local expiries = redis.call('zmscore', KEYS[1], unpack(slots))
    for j, s in ipairs(slots) do
      if owners[j] == h.token and expiries[j] and tonumber(expiries[j]) > now then
        held = held + 1
      end
    end
  end
  if held < h.n then
    missing[#missing + 1] = string.format('%d', i)
    h.lacking = true
  end
  h.slots = slots
end
if #missing > 1 then
  -- A lease named has no permit here left to keep; a "left:id" mark, of
  -- a release by permit ID before, stays so.
  for i, h in ipairs(holds) do
    if h.lacking and releasedByID(KEYS[5 + i]) then
      keepMark(KEYS[5 + i], h.ttl)
    elseif h.lacking then
      markLeft(KEYS[5 + i], h.ttl)
    end
  end
  return missing
end
local head, secret = lineHead(KEYS[3], KEYS[4])
-- The call's mark lasts as long as the longest lease would have.
local longest = 0
for i, h in ipairs(holds) do
  redis.call('zrem', KEYS[1], unpack(h.slots))
  redis.call('hdel', KEYS[2], 't:' .. h.token, unpack(h.slots))
  redis.call('set', KEYS[5 + i], 'left:id', 'PX', h.ttl)
  longest = math.max(longest, tonumber(h.ttl))
end
redis.call('set', KEYS[5], '1', 'PX', string.format('%d', longest))
tellHead(KEYS[3], KEYS[4], head, secret)
return {'1'}
