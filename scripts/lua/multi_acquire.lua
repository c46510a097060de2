-- Acquires every name of a MultiLock at once, or none, where one script
-- may touch all their keys (one server, not a Redis Cluster). Each name is
-- a plain lock as in mutex_acquire.lua. At the first name held by another
-- token it takes nothing and queues the waiter there, and only there: it
-- leaves the other names' queues and hands on any of them granted to it,
-- so that it never holds a name while it waits for another. The waiter's
-- ticket holds its grant with the digest of its names
-- ("m:<names>:<ttl>:<token>:<secret>"), so that a release of the same names can
-- grant it all of them at once (see multi_release.lua).
-- KEYS[1..] keys: for each name in order, its lock, fence, queue and tickets keys (mutex_acquire.lua's KEYS[1] to KEYS[4])
-- ARGV[1] token: the new holder's token, the same for a waiter's attempts
-- until it rotates it; a joining attempt takes over what a release granted
-- an earlier one (ARGV[8])
-- ARGV[2] ttl: time to live in milliseconds
-- ARGV[3] join: 1 to join the queue of the name held by another on failure, 0 not to
-- ARGV[4] arrival: the waiter's place in that queue (µs since the epoch)
-- ARGV[5] reserve: how long a reserved waiter has a handed-on name to itself, in ms
-- ARGV[6] secret: this attempt's secret, which keys the MAC of a grant from the ticket (see lib/tell.lua)
-- ARGV[7] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[8] stem: the stem of the waiter's tokens, empty for an attempt without one (see lib/take_over.lua)
-- ARGV[9] spend: 1 when the tickets are this attempt's own, which it marks
-- ARGV[10] tickets: for each name in order, its ticket id (mutex_acquire.lua's
-- ARGV[9]) without its tickets key and ":", separated by spaces (see lib/ticket_ids.lua)
-- as it lands (see lib/left.lua), 0 for a waiter's tickets
-- Returns: {1, fence, 0, 0} when acquired (fence: every name's fencing
-- counter now, see lib/take_all.lua); {0, 0, wait, at} when not: at is
-- the index (from 0) of the first name held by another token, and wait is
-- as in mutex_acquire.lua for that name.
-- The error reply BADFENCE, with nothing written, when the fencing counter
-- is malformed (see lib/fence.lua).

-- #include lib/join.lua
-- #include lib/hand_on.lua
-- #include lib/names_digest.lua
-- #include lib/take_all.lua
-- #include lib/take_over.lua
-- #include lib/marks.lua
-- #include lib/ticket_ids.lua

local token, ttl = ARGV[1], tonumber(ARGV[2])
local ids = ticketIDs(ARGV[10])
-- A malformed fencing counter refuses the attempt before it writes.
local counters = {}
for i = 1, #KEYS, 4 do
  local bad
  counters[i], bad = readFence(KEYS[i + 1])
  if bad then
    return bad
  end
end
local function mine(lock)
  return redis.call('type', lock).ok == 'string' and redis.call('get', lock) == token
end
for i = 1, #KEYS, 4 do
  local ticket = ticketIn(KEYS[i + 3], ids[i], false, true)
  if isMark(ticket) or ARGV[3] == '1' and superseded(valueOf(KEYS[i]), ticket, ARGV[8], token) then
    if ARGV[9] == '1' and i == 1 and mine(KEYS[i]) then
      local fence = 0 -- a copy of this attempt, which took every name
      for j = 1, #KEYS, 4 do
        fence = math.max(fence, counters[j] or serverNow() * 1024)
      end
      return {1, fence, 0, 0}
    end
    return {0, 0, 0, 0} -- an attempt released, undone or landed already, or one overtaken, landing late
  end
end
if ARGV[9] == '1' then
  for i = 4, #KEYS, 4 do
    markTicket(KEYS[i], ids[i - 3], ARGV[2])
  end
end
if ARGV[3] == '1' then
  -- A release of all its names granted them all to an earlier token.
  for i = 1, #KEYS, 4 do
    takeOver(KEYS[i], ARGV[8], token)
  end
end
for i = 1, #KEYS, 4 do
  if redis.call('exists', KEYS[i]) == 1 and not mine(KEYS[i]) then
    for j = 1, #KEYS, 4 do
      if j ~= i then
        redis.call('zrem', KEYS[j + 2], ids[j])
        if mine(KEYS[j]) then
          handOn(KEYS[j], KEYS[j + 1], KEYS[j + 2], KEYS[j + 3], ARGV[5], ARGV[7])
        end
      end
    end
    local wait = redis.call('pttl', KEYS[i])
    if ARGV[3] == '1' then
      local grant = 'm:' .. namesDigest(4) .. ':' .. ARGV[2] .. ':' .. token .. ':' .. ARGV[6]
      join(KEYS[i + 2], KEYS[i + 3], ids[i], ARGV[4], grant, wait, ttl)
    end
    return {0, 0, wait, (i - 1) / 4}
  end
end
for i = 1, #KEYS, 4 do
  redis.call('zrem', KEYS[i + 2], ids[i])
end
return {1, takeAll(4, token, ttl, ARGV[7], counters), 0, 0}
