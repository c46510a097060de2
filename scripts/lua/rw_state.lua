-- Reads who holds an RWMutex: its writer, its read leases, and who waits;
-- it writes nothing.
-- KEYS[1] writer: the write lock, a string holding the writer's token, or
-- the owner's hash of its write leases' tokens (see lib/exclusive.lua)
-- KEYS[2] readers: sorted set of read leases' tokens by the server time (ms) they lapse
-- KEYS[3] writers: sorted set of waiting writers' tokens by the time their wait lapses
-- KEYS[4] waiting: sorted set of waiting readers' tokens by the time their wait lapses
-- KEYS[5] fence: the fencing counter of the lock name
-- ARGV[1] shown: the most read leases, and the most waiting writers, to list
-- Returns: {writer, ttl, fence, readers, writers, waiting, owned, holds,
-- kind1, token1, left1, ...}, in decimal but for the tokens and kinds:
-- writer the token that holds the write lock, or its owner, '' when none;
-- owned 1 when writer is an owner, else 0; holds the write leases that
-- hold it; ttl its PTTL; fence the
-- counter, 0 when absent; readers, writers and waiting the read leases,
-- the waiting writers (the writers left out) and the waiting readers that
-- have not lapsed; then the read leases (kind 'r') and the waiting writers
-- (kind 'w') that have not lapsed, at most shown of each, soonest to lapse
-- first, with the milliseconds until they lapse.

-- #include lib/now.lua
-- #include lib/value.lua
-- #include lib/exclusive.lua

local now = serverNow()
local held, writer, owned = {}, valueOf(KEYS[1]) or '', 0
if redis.call('type', KEYS[1]).ok == 'hash' then
  held, writer, owned = holders(KEYS[1]), redis.call('hget', KEYS[1], 'o') or '', 1
  if #held == 0 or writer == '' then
    held, writer, owned = {}, '', 0
  end
elseif writer ~= '' then
  held = {writer}
end
local holding = {}
local live = '(' .. now
local fence = tonumber(valueOf(KEYS[5]) or '0') or 0
local writers = redis.call('zcount', KEYS[3], live, '+inf')
for _, token in ipairs(held) do
  holding[token] = true
  if (tonumber(redis.call('zscore', KEYS[3], token)) or 0) > now then
    writers = writers - 1
  end
end
local reply = {writer, string.format('%.0f', redis.call('pttl', KEYS[1])), string.format('%.0f', fence),
  string.format('%d', redis.call('zcount', KEYS[2], live, '+inf')), string.format('%d', writers),
  string.format('%d', redis.call('zcount', KEYS[4], live, '+inf')),
  string.format('%d', owned), string.format('%d', #held)}
local shown = tonumber(ARGV[1])
for _, set in ipairs({{'r', KEYS[2]}, {'w', KEYS[3]}}) do
  local kind = set[1]
  local listed = redis.call('zrangebyscore', set[2], live, '+inf', 'WITHSCORES', 'LIMIT', 0, shown + 1)
  local n = 0
  for i = 1, #listed, 2 do
    if not (kind == 'w' and holding[listed[i]]) and n < shown then
      n = n + 1
      reply[#reply + 1] = kind
      reply[#reply + 1] = listed[i]
      reply[#reply + 1] = string.format('%.0f', tonumber(listed[i + 1]) - now)
    end
  end
end
return reply
