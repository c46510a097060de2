-- Makes a quorum-chosen semaphore fencing token durable on this node: a
-- later acquisition granted here draws a larger one.
-- KEYS[1] fence: the fencing counter of the semaphore
-- ARGV[1] chosen: the fencing token the quorum chose
-- ARGV[2] idle: how long the counter lives after its last draw, in ms (see lib/fence.lua)
-- Returns: 1 (the counter is now at least ARGV[1]); the error reply
-- BADFENCE, writing nothing, when the counter is malformed (see lib/fence.lua).

-- #include lib/fence.lua

return raiseFence(KEYS[1], ARGV[1], ARGV[2]) or 1
