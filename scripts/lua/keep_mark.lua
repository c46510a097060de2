-- Lengthens the mark of a lease's attempt as extend.lua does, before
-- extend_lock.lua lengthens the lease apart (see there), for longer than
-- that: the lock's extension may land late, and the mark must outlive it.
-- KEYS[1] tickets: hash of the line's tickets (see lib/tickets.lua)
-- ARGV[1] ttl: how long the mark must last at least, in milliseconds
-- ARGV[2] ticket: the ticket id of the lease's attempt
-- Returns: 1 when the ticket holds a mark, which lasts that long now; 0
-- when it holds none.

-- #include lib/marks.lua

if not ticketLeft(KEYS[1], ARGV[2]) then
  return 0
end
keepTicketMark(KEYS[1], ARGV[2], ARGV[1])
return 1
