-- HMAC-SHA1 (RFC 2104) in hex: what a message carries to prove that the
-- script which sent it read the waiter's secret, which itself never leaves
-- the server (see tell.lua). A bare hash of secret and message could be
-- extended by anyone who read one. The key is at most 64 bytes (SHA-1's
-- block). XOR comes from the bit library where the server has one
-- (Redis, Valkey); miniredis has none, and gets the same by arithmetic.

local bxor = rawget(_G, 'bit') and bit.bxor or function(a, b)
  local r, p = 0, 1
  while a > 0 or b > 0 do
    if a % 2 ~= b % 2 then
      r = r + p
    end
    a = (a - a % 2) / 2
    b = (b - b % 2) / 2
    p = p * 2
  end
  return r
end

-- padded is the key XOR pad, filled to the block with the pad (XOR 0).
local function padded(key, pad)
  local b = {string.byte(key, 1, -1)}
  for i = 1, #b do
    b[i] = bxor(b[i], pad)
  end
  return string.char(unpack(b)) .. string.rep(string.char(pad), 64 - #key)
end

local function hmac(key, message)
  local inner = redis.sha1hex(padded(key, 0x36) .. message)
  local raw = string.gsub(inner, '%x%x', function(h) return string.char(tonumber(h, 16)) end)
  return redis.sha1hex(padded(key, 0x5c) .. raw)
end
