-- Deletes a latch, whether or not a count is set. A deleted latch is open:
-- its del keyspace event wakes the waiters, as the count-down that reaches
-- zero does, and the latch can be set again. The marks of undone settings
-- (latch_unset.lua) stay: each refuses only its own setting's requests.
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- Returns: 1 when the latch was deleted; 0 when no count was set.
return redis.call('del', KEYS[1])
