-- Queues a waiter whose attempt failed: its ticket joins the lock's queue
-- at its arrival and holds value (what a release hands it: see
-- hand_on.lua). The ticket expires with the lock, or after ttl when the
-- lock has no expiry (wait < 0): a waiter that died is out of line by
-- then, and a live one retries then, which renews it.
local function join(queue, ticket, arrival, value, wait, ttl)
  local life = wait
  if life < 0 then
    life = ttl
  end
  redis.call('zadd', queue, 'NX', arrival, ticket)
  redis.call('set', ticket, value, 'PX', life + 1)
  -- Only lengthened: GT leaves a longer expiry, and NX gives one to a
  -- queue that has none (the ZADD made it).
  if redis.call('pexpire', queue, life + ttl, 'GT') == 0 then
    redis.call('pexpire', queue, life + ttl, 'NX')
  end
end

-- refused is the reply of an attempt that lock refused, {0, 0, wait}:
-- how long the lock stays taken; the attempt joins the queue when joins
-- is '1'.
local function refused(lock, queue, ticket, joins, arrival, value, ttl)
  local wait = redis.call('pttl', lock)
  if joins == '1' then
    join(queue, ticket, arrival, value, wait, tonumber(ttl))
  end
  return {0, 0, wait}
end
