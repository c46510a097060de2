-- Reads how long a semaphore lease still holds its permits, as the slots
-- it won (see semaphore_extend.lua); it writes nothing, not even a purge.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] mark: the mark of the lease's attempt (see lib/left.lua)
-- ARGV[1] token: the lease's token
-- ARGV[2] n: how many permits the lease holds
-- ARGV[3] slots: the digest of the slots the lease won (see semaphore_acquire.lua)
-- Returns: {ttl, byID}: ttl the milliseconds until the first of its
-- permits expires, or either key if sooner, 0 when it does not hold them
-- all; byID 1 when a release by permit ID gave them back, else 0.

-- #include lib/slots_digest.lua
-- #include lib/now.lua
-- #include lib/left.lua
-- #include lib/key_left.lua

local list = redis.call('hget', KEYS[2], 't:' .. ARGV[1])
if not list then
  return {0, releasedByID(KEYS[3]) and 1 or 0}
end
local slots = {}
for s in string.gmatch(list, '%d+') do
  slots[#slots + 1] = s
end
if #slots == 0 or #slots ~= tonumber(ARGV[2]) or slotsDigest(list) ~= tonumber(ARGV[3]) then
  return {0, 0}
end
local owners = redis.call('hmget', KEYS[2], unpack(slots))
local expiries = redis.call('zmscore', KEYS[1], unpack(slots))
local now = serverNow()
local left
for i = 1, #slots do
  if owners[i] ~= ARGV[1] or not expiries[i] then
    return {0, 0}
  end
  left = math.min(left or math.huge, tonumber(expiries[i]) - now)
end
return {math.max(keyLeft(KEYS[2], keyLeft(KEYS[1], left)), 0), 0}
