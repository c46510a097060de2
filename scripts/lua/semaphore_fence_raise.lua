-- Makes a quorum-chosen semaphore fencing token durable on this node: a
-- later acquisition granted here draws a larger one.
-- KEYS[1] fence: the fencing counter of the semaphore
-- ARGV[1] chosen: the fencing token the quorum chose
-- Returns: 1 (the counter is now at least ARGV[1]).
if tonumber(redis.call('get', KEYS[1]) or '0') < tonumber(ARGV[1]) then
  redis.call('set', KEYS[1], ARGV[1])
end
return 1
