-- Reads who holds a FairMutex's lock and who waits in its line, in line
-- order with the time until each place lapses; it writes nothing.
-- KEYS[1] lock: the lock key, a string holding the holder's token
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiters' tokens by place in line
-- KEYS[4] lapse: sorted set of waiters' tokens by the server time (ms) their place lapses
-- ARGV[1] shown: the most waiters to list
-- Returns: {holder, ttl, fence, waiting, token1, lapse1, token2, lapse2, ...},
-- in decimal but for the tokens: holder the token that holds the lock, ''
-- when free; ttl the lock's PTTL; fence the counter, 0 when absent; waiting
-- the waiters whose place has not lapsed, the holder (who keeps its place
-- until it releases) left out; then, in line order, those among the first
-- shown + 100 in line, at most shown, each with the milliseconds until its
-- place lapses.

-- #include lib/now.lua
-- #include lib/value.lua

local holder = valueOf(KEYS[1]) or ''
local now = serverNow()
local fence = tonumber(valueOf(KEYS[2]) or '0') or 0
local waiting = redis.call('zcount', KEYS[4], '(' .. now, '+inf')
if holder ~= '' and (tonumber(redis.call('zscore', KEYS[4], holder)) or 0) > now then
  waiting = waiting - 1
end
local reply = {holder, string.format('%.0f', redis.call('pttl', KEYS[1])),
  string.format('%.0f', fence), string.format('%d', waiting)}
-- The scan stops after shown live waiters or as many dead ones as a purge
-- drops at most, so a backlog of dead entries costs no more.
local shown = tonumber(ARGV[1])
for _, token in ipairs(redis.call('zrange', KEYS[3], 0, shown + 99)) do
  local lapse = tonumber(redis.call('zscore', KEYS[4], token)) or 0
  if token ~= holder and lapse > now then
    reply[#reply + 1] = token
    reply[#reply + 1] = string.format('%.0f', lapse - now)
    if #reply >= 4 + 2 * shown then
      break
    end
  end
end
return reply
