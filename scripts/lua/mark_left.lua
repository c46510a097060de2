-- Marks the ticket of an attempt whose release found nothing to release:
-- the attempt may still be on its way (it timed out, or its answer was
-- not waited for), and must be refused when it lands, not hold the lock
-- for its TTL (see lib/left.lua).
-- KEYS[1] ticket: the attempt's ticket key
-- ARGV[1] left: how long the mark stays, in ms (the attempt's TTL)
-- Returns: 1.

-- #include lib/left.lua

markLeft(KEYS[1], ARGV[1])
return 1
