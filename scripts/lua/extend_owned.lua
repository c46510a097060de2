-- Extends a lease of a reentrant lock while its hold lasts (see
-- lib/owned.lua). The hold and the key are only ever lengthened: an
-- extension that lands late, after a longer one, must not cut the lease
-- short, and the key is shared by the owner's leases.
-- KEYS[1] lock: the lock key, the owner's hash
-- KEYS[2] tickets: hash of the line's tickets (see lib/tickets.lua)
-- as long (see lib/left.lua)
-- ARGV[1] lease: the lease's random token
-- ARGV[2] ttl: the time to live in milliseconds the hold needs at least
-- ARGV[3] ticket: the ticket id of the lease's attempt, whose mark it keeps
-- Returns: 1 when the lease holds the lock here; 0 when it does not.

-- #include lib/owned.lua
-- #include lib/marks.lua

if not ownedHolds(KEYS[1], ARGV[1]) then
  return 0
end
ownedHold(KEYS[1], ARGV[1], ARGV[2])
keepTicketMark(KEYS[2], ARGV[3], ARGV[2])
return 1
