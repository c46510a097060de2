-- Extends a plain lock for its holder as extend.lua does, without the
-- mark of its attempt, which keep_mark.lua lengthened first: while a Redis
-- Cluster slot migrates, the two keys may be on different masters, which
-- refuse a script over both (TRYAGAIN) until the migration ends.
-- KEYS[1] lock: the lock key
-- ARGV[1] token: the holder's token
-- ARGV[2] ttl: the time to live in milliseconds it needs at least
-- Returns: 1 when the token holds the lock here; 0 when the key is absent
-- or not this holder's.

-- #include lib/lengthen.lua
-- #include lib/value.lua

if valueOf(KEYS[1]) ~= ARGV[1] then
  return 0
end
lengthen(KEYS[1], ARGV[2])
return 1
