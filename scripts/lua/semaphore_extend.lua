-- Lengthens the expiry of a semaphore lease's permits while all of them
-- are still held, and are the slots the lease won: a node whose reply to
-- the acquisition was lost may have given the same token other slots,
-- which are not the lease's and must not count for it (a lease with an
-- expired permit stays lost, purged or not). An expiry is never
-- shortened, so that an extension that lands late cannot cut the lease
-- short.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- ARGV[1] token: the lease's token
-- ARGV[2] n: how many permits the lease holds
-- ARGV[3] slots: the digest of the slots the lease won (see semaphore_acquire.lua)
-- ARGV[4] ttl: the time to live in milliseconds the permits need at least
-- Returns: 1 when the lease holds its slots here; 0 when not.

-- #include lib/purge.lua
-- #include lib/slots_digest.lua
-- #include lib/now.lua
-- #include lib/lengthen.lua

local now = serverNow()
purgePermits(KEYS[1], KEYS[2], now)
local list = redis.call('hget', KEYS[2], 't:' .. ARGV[1])
if not list then
  return 0
end
local slots = {}
for s in string.gmatch(list, '%d+') do
  local expiry = redis.call('zscore', KEYS[1], s)
  if redis.call('hget', KEYS[2], s) ~= ARGV[1] or not expiry or tonumber(expiry) <= now then
    return 0
  end
  slots[#slots + 1] = {s, tonumber(expiry)}
  if #slots > tonumber(ARGV[2]) then
    return 0
  end
end
if #slots ~= tonumber(ARGV[2]) or slotsDigest(list) ~= tonumber(ARGV[3]) then
  return 0
end
local ttl = tonumber(ARGV[4])
for _, s in ipairs(slots) do
  if s[2] < now + ttl then
    redis.call('zadd', KEYS[1], 'XX', now + ttl, s[1])
  end
end
for _, k in ipairs({KEYS[1], KEYS[2]}) do
  lengthen(k, ttl)
end
return 1
