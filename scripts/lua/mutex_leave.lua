-- Takes a waiter that gives up out of the queue and marks its ticket as
-- left (see lib/left.lua). (No one listens
-- for a ticket's keyspace events: a release tells a waiter on its
-- Client's channel, see lib/tell.lua, so the DEL wakes no one.) When the
-- lock was granted or reserved to it meanwhile, it passes on to the next
-- waiter.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] token: the waiter's token: a grant to it, or to an earlier token
-- of the waiter (ARGV[5]), is passed on; empty to pass on only a reservation
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[4] left: how long the ticket stays marked as left, in ms (the waiter's
-- TTL); 0 deletes it instead, for a waiter that moves to another line, but
-- keeps a mark: such a leave can land late, after the waiter left for good
-- (a mark is final), and its attempts landing later must still be refused
-- ARGV[5] stem: the stem of the waiter's tokens (see lib/take_over.lua)
-- ARGV[6] keep: 1 to keep a grant to token itself, which the waiter's lease holds
-- ARGV[7] ticket: the leaving waiter's ticket id
-- Returns: 1 when the lock passed on, 0 otherwise.

-- #include lib/hand_on.lua
-- #include lib/marks.lua
-- #include lib/take_over.lua

-- The tickets are read before the first write, the line's ZREM, so that
-- over another program's key at either the call fails having written
-- nothing.
local gone, marked
if ARGV[4] == '0' then
  marked = isMark(ticketIn(KEYS[4], ARGV[7], true))
else
  gone = lapsedTickets(KEYS[4])
end
redis.call('zrem', KEYS[3], ARGV[7])
if ARGV[4] == '0' then
  if not marked then
    redis.call('hdel', KEYS[4], ARGV[7])
  end
else
  markTicket(KEYS[4], ARGV[7], ARGV[4], gone)
end
if redis.call('type', KEYS[1]).ok ~= 'string' then
  return 0
end
local holder = redis.call('get', KEYS[1])
local granted = ARGV[1] ~= '' and (holder == ARGV[1] and ARGV[6] ~= '1' or earlierOf(holder, ARGV[5], ARGV[1]))
if holder ~= 'reserved:' .. ARGV[7] and not granted then
  return 0
end
handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3])
return 1
