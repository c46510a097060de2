-- #include lib/owned.lua

-- An exclusive lock with a line (a FairMutex's, an RWMutex's write lock)
-- is a string holding its holder's token, or, taken for an owner, the
-- owner's hash of lib/owned.lua, each lease's token a field.

-- heldBy reports whether token holds such a lock, and whether the lock is
-- an owner's hash. A plain lock costs the one GET it always did.
local function heldBy(lock, token)
  local value = redis.pcall('get', lock)
  if type(value) == 'table' and value.err then -- not a string
    return ownedHolds(lock, token), true
  end
  return value == token, false
end

-- ownedBy reports whether such a lock is owner's hash: owner "" (a plain
-- lock's) owns none.
local function ownedBy(lock, owner)
  return owner ~= '' and redis.call('type', lock).ok == 'hash' and redis.call('hget', lock, 'o') == owner
end

-- takeFor takes such a lock, free, for token for ttl ms: as a string, or
-- for owner ("" for none) as the owner's hash.
local function takeFor(lock, token, ttl, owner)
  if owner == '' then
    redis.call('set', lock, token, 'PX', ttl)
    return
  end
  redis.call('hset', lock, 'o', owner)
  ownedHold(lock, token, ttl)
end

-- letGo gives up token's hold of such a lock: the string, or its lease in
-- the owner's hash, which goes when no lease is left. It returns 1 when
-- token held the lock, else 0.
local function letGo(lock, token)
  local kind = redis.call('type', lock).ok
  if kind == 'string' then
    if redis.call('get', lock) == token then
      return redis.call('del', lock)
    end
    return 0
  end
  if kind ~= 'hash' or not ownedHolds(lock, token) then
    return 0 -- an ended lease's field goes with the key, or the next settle
  end
  redis.call('hdel', lock, 'l:' .. token)
  if ownedSettle(lock) == 0 then
    redis.call('del', lock)
  end
  return 1
end

-- holders lists the tokens that hold such a lock.
local function holders(lock)
  local kind = redis.call('type', lock).ok
  if kind == 'string' then
    return {redis.call('get', lock)}
  end
  local found = {}
  if kind == 'hash' then
    local now = serverNow()
    local fields = redis.call('hgetall', lock)
    for i = 1, #fields, 2 do
      if string.sub(fields[i], 1, 2) == 'l:' and (tonumber(fields[i + 1]) or 0) > now then
        found[#found + 1] = string.sub(fields[i], 3)
      end
    end
  end
  return found
end
