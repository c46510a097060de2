-- Wakes the waiters of a key that a write of the library freed for them
-- and that wait without a ticket (an RWMutex's waiting readers, a Latch's
-- waiters): the message "wake" on the channel named as the key, which each
-- of their Clients subscribes while one of them waits there. It carries no
-- secret and grants nothing: a waiter that hears it attempts, or reads the
-- latch, again, so a forged one costs an attempt at most. Keyspace events
-- would tell the same, but only where CONFIG may turn them on. A classic
-- PUBLISH: on a Redis Cluster every server delivers it, and a Client that
-- hears it from several wakes one more waiter at most per copy. A user
-- refused the channel loses the wake-up, never the write before it: the
-- waiters then retry on their own.

local function wake(key)
  redis.pcall('publish', key, 'wake')
end
