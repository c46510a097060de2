-- Makes a quorum's fencing token durable on this node, but only while the
-- lock is still held here by the same holder: a later holder can only be
-- granted this node after that, so its counter starts above the token.
-- KEYS[1] lock: the lock key (string for a plain lock, hash for an owned one)
-- KEYS[2] fence: the fencing counter of the lock name
-- ARGV[1] holder: the plain lock's token or the owned lease's token
-- ARGV[2] chosen: the fencing token the quorum chose
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- Returns: 1 when the holder still holds the lock here and the counter is
-- now at least ARGV[2]; 0 when the holder lost the lock here; the error
-- reply BADFENCE, writing nothing, when the counter is malformed (see
-- lib/fence.lua).

-- #include lib/owned.lua
-- #include lib/fence.lua

local held = (redis.call('type', KEYS[1]).ok == 'string' and redis.call('get', KEYS[1]) == ARGV[1])
  or ownedHolds(KEYS[1], ARGV[1])
if not held then
  return 0
end
return raiseFence(KEYS[2], ARGV[2], ARGV[3]) or 1
