-- Counts the free permits of a semaphore, purging expired ones (at most
-- purgeLimit, see lib/purge.lua; the others count as free all the same).
-- KEYS[1] permits: sorted set of held slots scored by expiry in server milliseconds
-- KEYS[2] holders: hash from each held slot to its lease's token, and from t:<token> to its slots
-- KEYS[3] size: the number of permits stored by SetPermits; absent until then
-- ARGV[1] defaultSize: the number of permits while none is stored
-- Returns: the free permits, 0 when more are held than exist (after
-- SetPermits lowered the number). WRONGTYPE, with nothing written, when
-- the permits, the holders or the size are of another type.

-- #include lib/permits.lua
-- #include lib/now.lua

-- The size is read before the purge writes: over a size key of another
-- type the call fails having written nothing. (The purge reads the
-- permits and the holders before it writes them.)
local size = permitsInForce(KEYS[3], ARGV[1])
local now = serverNow()
purgePermits(KEYS[1], KEYS[2], now)
return math.max(size - redis.call('zcount', KEYS[1], '(' .. now, '+inf'), 0)
