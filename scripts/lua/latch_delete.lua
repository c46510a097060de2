-- Deletes a latch, whether or not a count is set. A deleted latch is open:
-- its waiters are woken (see lib/wake.lua), as by the count-down that
-- reaches zero, its setting is marked opened (see lib/opened.lua), and the
-- latch can be set again. The marks of undone settings (latch_unset.lua)
-- stay: each refuses only its own setting's requests.
-- KEYS[1] latch: a hash {count, gen}; absent while no count is set
-- KEYS[2] opened: sorted set of the latch's settings that opened, by the server time (ms) their mark lapses
-- ARGV[1] expiry: how long the mark of the opened setting lives, in ms: at least the setting's expiry
-- Returns: 1 when the latch was deleted; 0 when no count was set.

-- #include lib/opened.lua

return openLatch(KEYS[1], KEYS[2], ARGV[1])
