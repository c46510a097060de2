-- Acquires a plain (non-reentrant) lock and draws a fencing token. A waiter
-- that fails joins the lock's queue with a ticket key holding its grant
-- (its token and TTL): a release sets the lock to that token and tells the
-- waiter's client the fencing token (see lib/hand_on.lua), so nobody
-- barges in and the waiter needs no further request.
-- KEYS[1] lock: the lock key: the holder's token, or "reserved:<ticket>"
-- KEYS[2] fence: the fencing counter of the lock name (see lib/fence.lua)
-- KEYS[3] queue: sorted set of waiting tickets (their ids), by arrival
-- KEYS[4] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] token: the new holder's token, the same for a waiter's attempts
-- until it rotates it; a joining attempt takes over what a release granted
-- an earlier one (ARGV[7])
-- ARGV[2] ttl: time to live in milliseconds
-- ARGV[3] join: 1 to join the queue on failure, 0 not to
-- ARGV[4] arrival: the waiter's place in the queue (µs since the epoch)
-- ARGV[5] secret: this attempt's secret, which keys the MAC of a grant from the ticket (see lib/tell.lua)
-- ARGV[6] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[7] stem: the stem of the waiter's tokens, empty for an attempt without one (see lib/take_over.lua)
-- ARGV[8] spend: 1 when the ticket is this attempt's own (see lib/left.lua),
-- 0 for a waiter's ticket
-- ARGV[9] ticket: this waiter's ticket id; for an attempt that does not
-- queue, one of its own, which a release that finds nothing marks
-- (release_or_mark.lua) and which only the slow path reads
-- Returns: {1, fence, 0, granted} when acquired (granted: 1 when a
-- release granted the lock to token, or to this waiter's earlier token,
-- already: its expiry is lengthened to ttl); {0, 0, wait, 0} when not
-- (wait: how long the lock stays taken or reserved in ms, -1 when it has
-- no expiry).
-- The error reply BADFENCE, with nothing written, when the fencing counter
-- is malformed (see lib/fence.lua).

-- #include lib/fence.lua

-- The common case, an attempt that does not queue finding the name free,
-- takes it with one SET and draws with one INCR: it reads no mark, so a
-- copy of it that lands on a free name after its undo or its lease's
-- release takes the name for one TTL under a token no lease has (see
-- SAFETY.md). A malformed fencing counter is found only after the SET,
-- which it takes back. It comes before the functions of the other cases
-- are made: making them costs the server more than this case's commands.
if ARGV[8] == '1' and redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  local fence, bad = drawFence(KEYS[2], ARGV[6])
  if bad then
    redis.call('del', KEYS[1])
    return bad
  end
  return {1, fence, 0, 0}
end

-- #include lib/join.lua
-- #include lib/take_over.lua
-- #include lib/marks.lua
-- #include lib/lengthen.lua
-- One GET: nil when the lock is free, an error when it holds no string
-- (a reentrant lock's hash under the name).
local holder = redis.pcall('get', KEYS[1])
local free = not holder
if type(holder) ~= 'string' then
  holder = false
end
local joins = ARGV[3] == '1'
local mine = holder == ARGV[1] or joins and holder and earlierOf(holder, ARGV[7], ARGV[1])
local grant = 'g:' .. ARGV[2] .. ':' .. ARGV[1] .. ':' .. ARGV[5]
if not mine and not free then
  -- Held by another: a refusal reads no ticket, and a joining attempt
  -- queues one only where its waiter has none here (joinAfresh). A late
  -- attempt whose ticket is marked or names a later token is so refused
  -- with nothing written all the same; one that has a ticket reads it
  -- below.
  if superseded(holder, nil, ARGV[7], ARGV[1]) then
    return {0, 0, 0, 0} -- overtaken already
  end
  local wait = redis.call('pttl', KEYS[1])
  if not joins or joinAfresh(KEYS[3], KEYS[4], ARGV[9], ARGV[4], grant, wait, tonumber(ARGV[2])) then
    return {0, 0, wait, 0}
  end
end
-- One HGET of the ticket: its mark, and the token it names. A joining
-- attempt reads it strictly: it writes the tickets, and another type
-- fails it here, before its first write (the line's, which checks the
-- line).
local ticket, lapses = ticketIn(KEYS[4], ARGV[9], joins, true)
if isMark(ticket) then
  return {0, 0, 0, 0} -- an attempt of a waiter that left, or one released or undone, landing late
end
if ARGV[8] == '1' and holder == ARGV[1] then
  local fence, bad = currentFence(KEYS[2])
  return bad or {1, fence, 0, 0} -- a copy of this attempt, which took the lock: reported, never lengthened
end
if superseded(holder, ticket, ARGV[7], ARGV[1]) then
  return {0, 0, 0, 0} -- overtaken already
end
local counter, bad
if mine or free then
  -- What follows draws or reports a token: a malformed counter refuses
  -- the attempt before it writes.
  counter, bad = readFence(KEYS[2])
  if bad then
    return bad
  end
end
if mine then
  redis.call('zrem', KEYS[3], ARGV[9])
  if holder ~= ARGV[1] then
    redis.call('set', KEYS[1], ARGV[1], 'KEEPTTL') -- a take-over (see lib/take_over.lua)
  end
  -- Never shortened: this may be an attempt that landed late, after the
  -- lease it belongs to was extended.
  lengthen(KEYS[1], ARGV[2])
  -- A grant when the ticket names the token the lock held; not when an
  -- attempt of this waiter took the lock free (marked below) and this is
  -- a copy of it, or a later attempt. The ticket then names this token,
  -- as long as the lock lasts, so that the next attempt finds the grant
  -- too after a take-over.
  if grantIn(ticket) ~= holder then
    return {1, counter or serverNow() * 1024, 0, 0}
  end
  putTicket(KEYS[4], ARGV[9], grant, redis.call('pttl', KEYS[1]))
  return {1, counter or serverNow() * 1024, 0, 1}
end
if free then
  redis.call('zrem', KEYS[3], ARGV[9])
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  if ARGV[3] == '1' and ticket then
    -- No grant (see namedIn), as long as the ticket lasts.
    redis.call('hset', KEYS[4], ARGV[9], string.format('%.0f', lapses) .. ':taken:' .. ARGV[1])
  end
  return {1, drawnFrom(KEYS[2], counter, ARGV[6]), 0, 0}
end
local reply = refused(KEYS[1], KEYS[3], KEYS[4], ARGV[9], ARGV[3], ARGV[4], grant, ARGV[2])
reply[4] = 0
return reply
