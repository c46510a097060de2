-- Queues a waiter whose attempt failed: its ticket joins the lock's queue
-- at its arrival and holds value (what a release hands it: see
-- hand_on.lua). The ticket expires with the lock, or after ttl when the
-- lock has no expiry (wait < 0): a waiter that died is out of line by
-- then, and a live one retries then, which renews it. Returns 1 when the
-- waiter is now at the head of the queue, 0 otherwise.
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
  if redis.call('zrank', queue, ticket) == 0 then
    return 1
  end
  return 0
end

-- refused is the reply of an attempt that lock refused: how long the lock
-- stays taken, and, when the attempt joins (join == '1'), whether it is
-- now at the head of the queue, as join queues it.
local function refused(lock, queue, ticket, joins, arrival, value, ttl)
  local wait = redis.call('pttl', lock)
  local first = 0
  if joins == '1' then
    first = join(queue, ticket, arrival, value, wait, tonumber(ttl))
  end
  return {0, 0, wait, first}
end
