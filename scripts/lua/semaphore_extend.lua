-- Lengthens the expiry of a semaphore lease's permits while all of them
-- are still held, and are the slots the lease won: a node whose reply to
-- the acquisition was lost may have given the same token other slots,
-- which are not the lease's and must not count for it (a lease with an
-- expired permit stays lost, purged or not). An expiry is never
-- shortened, so that an extension that lands late cannot cut the lease
-- short.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] mark: the mark of the lease's attempt, which it keeps as long (see lib/left.lua)
-- ARGV[1] token: the lease's token
-- ARGV[2] n: how many permits the lease holds
-- ARGV[3] slots: the digest of the slots the lease won (see semaphore_acquire.lua)
-- ARGV[4] ttl: the time to live in milliseconds the permits need at least
-- Returns: 1 when the lease holds its slots here; 2 when a release by
-- permit ID gave them back (see lib/left.lua); 0 when not.

-- #include lib/purge.lua
-- #include lib/slots_digest.lua
-- #include lib/now.lua
-- #include lib/lengthen.lua
-- #include lib/left.lua

local now = serverNow()
purgePermits(KEYS[1], KEYS[2], now)
local list = redis.call('hget', KEYS[2], 't:' .. ARGV[1])
if not list then
  if releasedByID(KEYS[3]) then
    return 2
  end
  return 0
end
local n = tonumber(ARGV[2])
local slots = {}
for s in string.gmatch(list, '%d+') do
  slots[#slots + 1] = s
  if #slots > n then
    return 0
  end
end
if #slots == 0 or #slots ~= n or slotsDigest(list) ~= tonumber(ARGV[3]) then
  return 0
end
-- One call per command over all the lease's slots, not per slot.
local owners = redis.call('hmget', KEYS[2], unpack(slots))
local expiries = redis.call('zmscore', KEYS[1], unpack(slots))
local ttl = tonumber(ARGV[4])
local longer = {}
for i, s in ipairs(slots) do
  if owners[i] ~= ARGV[1] or not expiries[i] or tonumber(expiries[i]) <= now then
    return 0
  end
  if tonumber(expiries[i]) < now + ttl then
    longer[#longer + 1] = now + ttl
    longer[#longer + 1] = s
  end
end
if #longer > 0 then
  redis.call('zadd', KEYS[1], 'XX', unpack(longer))
end
for _, k in ipairs({KEYS[1], KEYS[2]}) do
  lengthen(k, ttl)
end
keepMark(KEYS[3], ttl)
return 1
