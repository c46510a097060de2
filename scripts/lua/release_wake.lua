-- Compare-and-delete that also hands the lock on to the oldest waiter,
-- instead of deleting it, so that a release makes no DEL event on the
-- lock key. Native commands cannot do this, so a Notify client releases
-- with this script.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] forced: the lock's forced marker, read only where the lock is not the token's (see lib/forced.lua)
-- KEYS[5] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[4] ahead: for the undo of a queued waiter's failed attempt, the
-- waiter's place in line (its arrival); 0 otherwise. The lock then stays
-- with the waiter unless a live waiter is ahead of it: two waiters that
-- each got one node of a split quorum would otherwise hand their nodes to
-- each other at every attempt; this way the later one yields.
-- Returns: 1 when released; 2 when kept for the waiter; 0 when the key is
-- absent or not this holder's; leaseForced when, so, a force-release freed
-- the token.

-- The common case, the token's release with nobody waiting, comes before
-- the functions of the others are made: making them costs the server more
-- than its commands. One GET, which catches the WRONGTYPE of a key that
-- holds no string (as valueOf in lib/value.lua), and the ZPOPMIN that
-- hands on (lib/hand_on.lua) finding nobody.
local held = redis.pcall('get', KEYS[1])
local popped
if held == ARGV[1] and ARGV[4] == '0' then
  popped = redis.call('zpopmin', KEYS[3])
  if #popped == 0 then
    redis.call('del', KEYS[1])
    return 1
  end
end

-- #include lib/hand_on.lua
-- #include lib/forced.lua

if held ~= ARGV[1] then
  if wasForced(KEYS[4], ARGV[1]) then
    return leaseForced
  end
  return 0
end
if ARGV[4] ~= '0' then
  local head = liveHeadIn(KEYS[3], KEYS[5])
  if not head or tonumber(redis.call('zscore', KEYS[3], head)) > tonumber(ARGV[4]) then
    return 2
  end
end
handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[5], ARGV[2], ARGV[3], popped)
return 1
