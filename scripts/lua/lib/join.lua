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
