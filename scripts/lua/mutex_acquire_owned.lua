-- Acquires a reentrant lock for an owner and draws a fencing token. Each
-- lease of the owner holds the lock by a field of its own (see
-- lib/owned.lua), so that undoing or releasing one lease, late or twice,
-- never touches another lease's hold. A waiter that fails joins the
-- lock's queue as in mutex_acquire.lua.
-- KEYS[1] lock: the lock key: the owner's hash, or "reserved:<ticket>"
-- KEYS[2] fence: the fencing counter of the lock name (see lib/fence.lua)
-- KEYS[3] queue: sorted set of waiting tickets (their ids), by arrival
-- KEYS[4] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] owner: the owner identity
-- ARGV[2] lease: this acquisition's random token
-- ARGV[3] ttl: time to live of the lease's hold in milliseconds
-- ARGV[4] join: 1 to join the queue on failure, 0 not to
-- ARGV[5] arrival: the waiter's place in the queue (µs since the epoch)
-- ARGV[6] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[7] secret: this attempt's secret, which the waiter's ticket holds
-- ("o:<secret>") and which keys the MAC of its wake-up (see lib/tell.lua)
-- ARGV[8] ticket: this waiter's ticket id; for an attempt that does not
-- queue, its mark (ARGV[9])
-- ARGV[9] mark: this attempt's own mark, a ticket id, which it sets as it
-- lands, as does a release that finds nothing (release_owned.lua): an
-- owner's attempts each have a lease token of their own, so that a
-- waiter's attempt that lands late, or twice, while a later attempt of its
-- holds the lock would re-enter with a lease nobody has
-- Returns: {1, fence, 0} when acquired or re-entered; {0, 0, wait} when
-- not (wait: how long the lock stays taken or reserved in ms, -1 without
-- expiry).
-- The error reply BADFENCE, with nothing written, when the fencing counter
-- is malformed (see lib/fence.lua).

-- #include lib/join.lua
-- #include lib/owned.lua
-- #include lib/fence.lua
-- #include lib/marks.lua

if ARGV[8] ~= ARGV[9] and ticketLeft(KEYS[4], ARGV[8]) then
  return {0, 0, 0} -- an attempt of a waiter that left, landing late
end
-- Read strictly (see ticketIn): every path below writes the tickets, and
-- another type fails the call here, before its first write.
if isMark(ticketIn(KEYS[4], ARGV[9], true)) then
  if ownedHolds(KEYS[1], ARGV[2]) then
    local fence, bad = currentFence(KEYS[2])
    return bad or {1, fence, 0} -- a copy of this attempt, which took the lock
  end
  return {0, 0, 0} -- an attempt released, undone or landed already, landing late
end
local kind = redis.call('type', KEYS[1]).ok
local reserved = kind == 'string' and redis.call('get', KEYS[1]) == 'reserved:' .. ARGV[8]
if reserved or kind == 'none' or (kind == 'hash' and redis.call('hget', KEYS[1], 'o') == ARGV[1]) then
  local counter, bad = readFence(KEYS[2])
  if bad then
    return bad -- before the mark: a copy is refused by the counter alike
  end
  redis.call('zrem', KEYS[3], ARGV[8]) -- the first write, which checks the line
  markTicket(KEYS[4], ARGV[9], ARGV[3]) -- the attempt landed: a copy of it is refused
  if reserved then
    redis.call('del', KEYS[1])
  end
  redis.call('hset', KEYS[1], 'o', ARGV[1])
  ownedHold(KEYS[1], ARGV[2], ARGV[3])
  return {1, drawnFrom(KEYS[2], counter, ARGV[6]), 0}
end
-- The join's ZADD, if any, is the first write: it checks the line.
local reply = refused(KEYS[1], KEYS[3], KEYS[4], ARGV[8], ARGV[4], ARGV[5], 'o:' .. ARGV[7], ARGV[3])
markTicket(KEYS[4], ARGV[9], ARGV[3])
return reply
