-- Reads a semaphore's permits in use, by the lease that holds them, its
-- number of permits and its line's length; it writes nothing.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] size: the number of permits stored by SetPermits; absent until then
-- KEYS[4] fence: the semaphore's fencing counter
-- KEYS[5] queue: sorted set of the waiters' tickets, by place
-- ARGV[1] shown: the most held slots to list
-- Returns: {size, fence, held, waiting, token1, slot1, left1, ...}, in
-- decimal but for the tokens: size the stored number of permits, 0 when
-- none is stored; fence the counter, 0 when absent; held the slots whose
-- lease has not expired; waiting the tickets in the line; then at most
-- shown of those slots, soonest to expire first, each with its lease's
-- token and the milliseconds until it expires.

-- #include lib/now.lua
-- #include lib/value.lua

local now = serverNow()
local live = '(' .. now
local size = tonumber(valueOf(KEYS[3]) or '0') or 0
local fence = tonumber(valueOf(KEYS[4]) or '0') or 0
local reply = {string.format('%.0f', size), string.format('%.0f', fence),
  string.format('%d', redis.call('zcount', KEYS[1], live, '+inf')), string.format('%d', redis.call('zcard', KEYS[5]))}
local slots = redis.call('zrangebyscore', KEYS[1], live, '+inf', 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
for i = 1, #slots, 2 do
  reply[#reply + 1] = redis.call('hget', KEYS[2], slots[i]) or ''
  reply[#reply + 1] = slots[i]
  reply[#reply + 1] = string.format('%.0f', tonumber(slots[i + 1]) - now)
end
return reply
