-- Frees a Mutex's lock whoever holds it, a plain lease's token or an
-- owner's leases (an operator's force-release), and hands it on to the
-- oldest waiter as a release does (see lib/hand_on.lua). The former
-- holder's Extend and Unlock then find the lock gone or another's; a
-- plain lease's token goes into the forced marker for as long as its hold
-- had left (see lib/forced.lua), so that they answer that it was forced,
-- even once a late copy of its attempt took the free name back. A lock
-- reserved for a waiter is held by no one: a release handed it on to the
-- first in line already, and the reservation stays hers.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] forced: the lock's forced marker
-- KEYS[5] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] reserve: how long a reserved waiter has the lock to itself, in ms
-- ARGV[2] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- Returns: 1 when the lock was held and is freed; 0 when it was free or
-- reserved.

-- #include lib/hand_on.lua
-- #include lib/forced.lua

local bad = badForced(KEYS[4])
if bad then
  return bad
end
local kind = redis.call('type', KEYS[1]).ok
if kind == 'none' then
  return 0
end
local holder, left
if kind == 'string' then
  holder = redis.call('get', KEYS[1])
  if string.find(holder, 'reserved:', 1, true) == 1 then
    return 0
  end
  left = redis.call('pttl', KEYS[1])
end
handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[5], ARGV[1], ARGV[2])
if holder then
  markForced(KEYS[4], holder, left)
end
return 1
