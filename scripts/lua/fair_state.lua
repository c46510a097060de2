-- Reads who holds a FairMutex's lock and who waits in its line, in line
-- order with the time until each place lapses; it writes nothing.
-- KEYS[1] lock: the lock key, a string holding the holder's token, or the
-- owner's hash of its leases' tokens (see lib/owned.lua)
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiters' tokens by place in line
-- KEYS[4] lapse: sorted set of waiters' tokens by the server time (ms) their place lapses
-- ARGV[1] shown: the most waiters to list
-- Returns: {holder, ttl, fence, waiting, owned, holds, token1, lapse1,
-- token2, lapse2, ...}, in decimal but for the tokens: holder the token
-- that holds the lock, or its owner, '' when free; ttl the lock's PTTL;
-- fence the counter, 0 when absent; waiting the waiters whose place has
-- not lapsed, the holders (who keep their places until they release)
-- left out; owned 1 when holder is an owner, else 0; holds the leases that
-- hold the lock; then, in line order, those among the first
-- shown + 100 in line, at most shown, each with the milliseconds until its
-- place lapses.

-- #include lib/now.lua
-- #include lib/value.lua
-- #include lib/exclusive.lua

local now = serverNow()
local held, holder, owned = {}, valueOf(KEYS[1]) or '', 0
if redis.call('type', KEYS[1]).ok == 'hash' then
  held, holder, owned = holders(KEYS[1]), redis.call('hget', KEYS[1], 'o') or '', 1
  if #held == 0 or holder == '' then
    held, holder, owned = {}, '', 0
  end
elseif holder ~= '' then
  held = {holder}
end
local holding = {}
local fence = tonumber(valueOf(KEYS[2]) or '0') or 0
local waiting = redis.call('zcount', KEYS[4], '(' .. now, '+inf')
for _, token in ipairs(held) do
  holding[token] = true
  if (tonumber(redis.call('zscore', KEYS[4], token)) or 0) > now then
    waiting = waiting - 1
  end
end
local reply = {holder, string.format('%.0f', redis.call('pttl', KEYS[1])),
  string.format('%.0f', fence), string.format('%d', waiting),
  string.format('%d', owned), string.format('%d', #held)}
-- The scan stops after shown live waiters or as many dead ones as a purge
-- drops at most, so a backlog of dead entries costs no more.
local shown = tonumber(ARGV[1])
for _, token in ipairs(redis.call('zrange', KEYS[3], 0, shown + 99)) do
  local lapse = tonumber(redis.call('zscore', KEYS[4], token)) or 0
  if not holding[token] and lapse > now then
    reply[#reply + 1] = token
    reply[#reply + 1] = string.format('%.0f', lapse - now)
    if #reply >= 6 + 2 * shown then
      break
    end
  end
end
return reply
