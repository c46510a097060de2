-- Releases the lock of an attempt that had a ticket of its own (one that
-- did not queue) when its token holds it, and marks that ticket when it
-- does not (or always, for a queued waiter's lease: its attempts share the
-- lease's token and ticket), in one step: the attempt may still be on its way (it timed
-- out, or its answer was not waited for), and must then be refused when
-- it lands, not hold the lock for its TTL (see lib/left.lua; a plain
-- attempt with a ticket of its own reads the mark only where the lock is
-- held, see mutex_acquire.lua). A release
-- and a mark sent one after the other could land either side of the
-- attempt on a stalled server, which reads its clients' connections in
-- any order when it resumes. A release hands the lock on as release_wake
-- does.
-- KEYS[1] lock: the lock key
-- KEYS[2] fence: the fencing counter of the lock name
-- KEYS[3] queue: sorted set of waiting tickets, by arrival
-- KEYS[4] tickets: hash of the line's tickets (see lib/tickets.lua)
-- KEYS[5] forced: the lock's forced marker, read only where the lock is not the token's (see lib/forced.lua)
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[4] left: how long the mark stays, in ms (the attempt's TTL)
-- ARGV[5] always: 1 to mark the ticket also when the lock was released
-- ARGV[6] ticket: the attempt's ticket id
-- Returns: 1 when released; 0 when the key is absent or not this holder's
-- (the ticket is marked); leaseForced when, so, a force-release freed the
-- token (the ticket is marked).

-- #include lib/hand_on.lua
-- #include lib/marks.lua
-- #include lib/forced.lua

local held = valueOf(KEYS[1]) == ARGV[1]
if not held then
  markOnReleaseIn(ARGV[5] == '1' and marksAll or marksMissed, held, KEYS[3], KEYS[4], ARGV[6], ARGV[4])
  if wasForced(KEYS[5], ARGV[1]) then
    return leaseForced
  end
  return 0
end
-- The hand-on comes first: on a line of the wrong type it fails before
-- it writes, and so does the whole script. The mark's sample of the
-- tickets comes before it: on tickets of the wrong type, so does that.
local gone
if ARGV[5] == '1' then
  gone = lapsedTickets(KEYS[4])
end
handOn(KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[2], ARGV[3])
if ARGV[5] == '1' then
  -- The ticket is out of line already: the write that gave the lock to
  -- its token took it out (a hand-on, or the waiter's attempt).
  markTicket(KEYS[4], ARGV[6], ARGV[4], gone)
end
return 1
