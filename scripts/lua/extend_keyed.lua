-- extend.lua for a line whose tickets are keys of their own (a FairMutex's,
-- an RWMutex's writers'), until they move into a hash beside the line.
-- Compare-and-set of the expiry: extends a plain lock only for its holder,
-- and only ever lengthens it, so that an extension that lands late (its
-- reply timed out, a longer one followed) cannot cut the lease short.
-- It keeps the mark of the attempt that took the lock as long (see
-- lib/left.lua). A token that a force-release freed is refused first:
-- a late copy of its attempt may hold the name under it again.
-- KEYS[1] lock: the lock key
-- KEYS[2] ticket: the ticket of the lease's attempt
-- KEYS[3] forced: the lock's forced marker (see lib/forced.lua)
-- ARGV[1] token: the holder's token
-- ARGV[2] ttl: the time to live in milliseconds it needs at least
-- Returns: 1 when the token holds the lock here; 0 when the key is absent
-- or not this holder's; leaseForced when a force-release freed the token.

-- #include lib/lengthen.lua
-- #include lib/left.lua
-- #include lib/forced.lua

if wasForced(KEYS[3], ARGV[1]) then
  return leaseForced
end
if redis.call('type', KEYS[1]).ok ~= 'string' or redis.call('get', KEYS[1]) ~= ARGV[1] then
  return 0
end
lengthen(KEYS[1], ARGV[2])
keepMark(KEYS[2], ARGV[2])
return 1
