-- A lock's forced marker (KEYS "<lock>:forced") is a sorted set of the
-- tokens whose hold an operator's force-release freed, each scored with
-- the server time at which that hold would have expired. The scripts that
-- confirm a lease read it, so that the lease stays lost, and says why,
-- even where a late copy of its own attempt took the free name back under
-- its token. Tokens are random and never reused: an entry past its score
-- is harmless, and the next force-release clears it.

-- #include lib/formats.lua
-- #include lib/now.lua

-- badForced is the error reply for a marker that another program made
-- something other than a sorted set, nil for a good one: the
-- force-release that finds it writes nothing.
local function badForced(forced)
  local kind = redis.call('type', forced).ok
  if kind == 'zset' or kind == 'none' then
    return nil
  end
  return redis.error_reply('BADFORCED the forced marker ' .. forced .. ' is a ' .. kind ..
    ', not a sorted set: delete it')
end

-- wasForced reports whether a force-release freed token's hold: one ZSCORE.
local function wasForced(forced, token)
  return redis.call('zscore', forced, token) ~= false
end

-- markForced notes that a force-release freed token's hold, which had
-- left ms to go (none for a hold without an expiry, or gone); the marker
-- lasts as long as its longest entry.
local function markForced(forced, token, left)
  if left <= 0 then
    return
  end
  local now = serverNow()
  redis.call('zremrangebyscore', forced, '-inf', now)
  redis.call('zadd', forced, now + left, token)
  if redis.call('pttl', forced) < left then
    redis.call('pexpire', forced, left)
  end
end
