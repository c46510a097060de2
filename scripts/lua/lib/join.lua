-- #include lib/tickets.lua

-- Queues a waiter whose attempt failed (the caller read its ticket
-- strictly, see ticketIn: the ZADD, which checks the line, is the first
-- write): its ticket (id, a field of
-- tickets, see tickets.lua) joins the lock's queue at its arrival and
-- holds value (what a release hands it: see hand_on.lua). The ticket
-- lapses with the lock, or after ttl when the lock has no expiry (wait <
-- 0): a waiter that died is out of line by then, and a live one retries
-- then, which renews it. The queue and the tickets hash outlive the
-- ticket by ttl, so that a grant made to it while it lives (which makes
-- the ticket last the grant's ttl) finds both.
local function join(queue, tickets, id, arrival, value, wait, ttl)
  local life = wait
  if life < 0 then
    life = ttl
  end
  redis.call('zadd', queue, 'NX', arrival, id)
  redis.call('hset', tickets, id, string.format('%.0f', ticketNow() + life + 1) .. ':' .. value)
  outlive(tickets, life + 1 + ttl)
  outlive(queue, life + ttl)
end

-- joinAfresh is join for an attempt that has not read its ticket: it
-- queues the ticket only where the waiter has none here (HSETNX, the
-- common case: a waiter's first join), and otherwise writes nothing and
-- returns false, for the caller to read the ticket (it may be marked, or
-- name a later token) and join then. Its first write, HSETNX, checks the
-- tickets; a line of another type fails it once the ticket is taken back
-- out, so that it has written nothing.
local function joinAfresh(queue, tickets, id, arrival, value, wait, ttl)
  local life = wait
  if life < 0 then
    life = ttl
  end
  if redis.call('hsetnx', tickets, id, string.format('%.0f', ticketNow() + life + 1) .. ':' .. value) == 0 then
    return false
  end
  if type(redis.pcall('zadd', queue, 'NX', arrival, id)) ~= 'number' then
    redis.call('hdel', tickets, id)
    redis.call('zadd', queue, 'NX', arrival, id) -- fails again, now that nothing is written
  end
  outlive(tickets, life + 1 + ttl)
  outlive(queue, life + ttl)
  return true
end

-- refused is the reply of an attempt that lock refused, {0, 0, wait}:
-- how long the lock stays taken; the attempt joins the queue when joins
-- is '1'.
local function refused(lock, queue, tickets, id, joins, arrival, value, ttl)
  local wait = redis.call('pttl', lock)
  if joins == '1' then
    join(queue, tickets, id, arrival, value, wait, tonumber(ttl))
  end
  return {0, 0, wait}
end
