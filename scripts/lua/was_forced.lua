-- Reads whether a force-release freed a token's hold on a lock; it writes
-- nothing. A release that found the lock not its own asks it, after a
-- native compare-and-delete or release.lua, so that the common release
-- pays nothing for it.
-- KEYS[1] forced: the lock's forced marker (see lib/forced.lua)
-- ARGV[1] token: the lease's token
-- Returns: 1 when a force-release freed the token's hold; 0 otherwise.

-- #include lib/forced.lua

if wasForced(KEYS[1], ARGV[1]) then
  return 1
end
return 0
