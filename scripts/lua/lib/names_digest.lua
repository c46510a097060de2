-- Names the set of a MultiLock's names: the SHA1 of their lock keys,
-- every step-th key from KEYS[1], each after its length so that no two
-- sets give the same text.
local function namesDigest(step)
  local parts = {}
  for i = 1, #KEYS, step do
    parts[#parts + 1] = #KEYS[i] .. ':' .. KEYS[i]
  end
  return redis.sha1hex(table.concat(parts))
end
