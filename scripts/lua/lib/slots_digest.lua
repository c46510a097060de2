-- The digest of a semaphore lease's slots (their comma-separated list): a
-- number below 2^52, exact in a Lua double and in the client's int64, by
-- which a quorum tells which nodes gave a lease the same slots.

-- #include lib/formats.lua

local function slotsDigest(list)
  return tonumber(string.sub(redis.sha1hex(list), 1, digestHexDigits), 16)
end
