-- keep_mark.lua for a line whose tickets are keys of their own (see
-- extend_keyed.lua).
-- Lengthens the mark of a lease's attempt as extend.lua does, before
-- extend_lock.lua lengthens the lease apart (see there), for longer than
-- that: the lock's extension may land late, and the mark must outlive it.
-- KEYS[1] ticket: the ticket of the lease's attempt
-- ARGV[1] ttl: how long the mark must last at least, in milliseconds
-- Returns: 1 when the ticket holds a mark, which lasts that long now; 0
-- when it holds none.

-- #include lib/left.lua

if not hasLeft(KEYS[1]) then
  return 0
end
keepMark(KEYS[1], ARGV[1])
return 1
