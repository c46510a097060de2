-- Takes n permits of a semaphore at once, or none. Permits are numbered
-- slots 1..size; this node gives the first n free ones from a slot the
-- client drew at random (the same on every node of an attempt). A slot is held
-- until its expiry on the server's clock, so a holder that dies gives it
-- back at its TTL whatever the clients' clocks say; expired slots are
-- purged first. With a quorum, a lease holds only where a majority gave it
-- the same slots, which the reply's digest lets the client tell.
-- Waiters that join (under Notify) wait in line, first come first served:
-- one takes permits only when it is first in line, and an attempt that
-- does not join (TryAcquire, Poll) only when no one is in line. A waiter
-- that takes permits and leaves enough for the next one in line tells it
-- (lib/tell.lua), which wakes it.
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots, comma-separated
-- KEYS[3] size: the number of permits stored by SetPermits; absent until then
-- KEYS[4] fence: the fencing counter of the semaphore; it never expires
-- KEYS[5] queue: sorted set of waiting tickets, by place
-- KEYS[6] ticket: this waiter's ticket key, holding n; it lapses unless an attempt refreshes it
-- ARGV[1] token: the lease's random token
-- ARGV[2] n: how many permits to take
-- ARGV[3] ttl: time to live of the permits in milliseconds
-- ARGV[4] defaultSize: the number of permits while none is stored
-- ARGV[5] seed: a random number below 2^52; the scan for free slots starts at slot seed mod size + 1
-- ARGV[6] join: 1 to wait in line, 0 not to
-- ARGV[7] place: the waiter's place in line (µs since the epoch, the same on every node); 0 for the server's time
-- ARGV[8] wait: how long the ticket lives without a refresh, in ms
-- Returns: {status, fence, retry, size, slots}: status 1 when acquired,
-- 0 when fewer than n permits are free or another waiter is first in line,
-- -1 when n exceeds size (nothing written); fence, the counter after an
-- acquisition (else 0); retry, when fewer than n are free, the
-- milliseconds until enough expire (-1 when another waiter is first, 0
-- when acquired); size, the number of permits in force; slots, a 52-bit
-- digest of the slots given (else 0).

-- #include lib/live_head.lua
-- #include lib/tell.lua

local size = tonumber(redis.call('get', KEYS[3]) or ARGV[4])
local n = tonumber(ARGV[2])
if n > size then
  return {-1, 0, 0, size, 0}
end
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for _, s in ipairs(redis.call('zrangebyscore', KEYS[1], '-inf', now)) do
  redis.call('hdel', KEYS[2], s, 't:' .. (redis.call('hget', KEYS[2], s) or ''))
end
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
local free = size - redis.call('zcard', KEYS[1])
local ttl = tonumber(ARGV[3])
local head = liveHead(KEYS[5])
if ARGV[6] == '1' then
  local place = tonumber(ARGV[7])
  if place == 0 then
    place = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  redis.call('zadd', KEYS[5], 'NX', place, KEYS[6])
  redis.call('set', KEYS[6], n, 'PX', ARGV[8])
  if redis.call('pttl', KEYS[5]) < tonumber(ARGV[8]) then
    redis.call('pexpire', KEYS[5], ARGV[8])
  end
  head = liveHead(KEYS[5])
end
if free < n then
  -- n <= size, so at least n - free slots are held: the (n - free)-th
  -- earliest expiry frees enough.
  local e = redis.call('zrange', KEYS[1], n - free - 1, n - free - 1, 'WITHSCORES')
  return {0, 0, tonumber(e[2]) - now, size, 0}
end
if head and head ~= KEYS[6] then
  return {0, 0, -1, size, 0}
end
redis.call('zrem', KEYS[5], KEYS[6])
-- At most size - free slots are held, so n of 1..size are free. Starting
-- where the client chose, concurrent attempts take different slots, and
-- where the nodes' free slots differ (a lease holds its slots on a
-- majority only) some start finds slots free on a majority.
local slots = {}
local start = tonumber(ARGV[5]) % size
for i = 0, size - 1 do
  local s = (start + i) % size + 1
  if not redis.call('zscore', KEYS[1], s) then
    slots[#slots + 1] = s
    redis.call('zadd', KEYS[1], now + ttl, s)
    redis.call('hset', KEYS[2], s, ARGV[1])
    if #slots == n then
      break
    end
  end
end
table.sort(slots)
local list = table.concat(slots, ',')
redis.call('hset', KEYS[2], 't:' .. ARGV[1], list)
for _, k in ipairs({KEYS[1], KEYS[2]}) do
  if redis.call('pttl', k) < ttl then
    redis.call('pexpire', k, ttl)
  end
end
local after, wants = liveHead(KEYS[5])
if after and free - n >= tonumber(wants) then
  tell(after, 0)
end
local digest = tonumber(string.sub(redis.sha1hex(list), 1, 13), 16)
return {1, redis.call('incr', KEYS[4]), 0, size, digest}
