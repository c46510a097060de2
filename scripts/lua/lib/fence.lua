-- A fencing counter (the key "<prefix>{name}:fence") draws the tokens of a
-- name's acquisitions: each is the counter plus one. A counter that does
-- not exist (the name was idle for longer than the counter lives, or the
-- node lost its data) starts again from the server's clock, in
-- milliseconds times 1024: above every token it drew before, as long as
-- it drew fewer than 1024 a millisecond on average and the clock did not
-- step back. The counter lives idle ms after its last draw or raise, so
-- that a name no one uses leaves nothing behind. See the package
-- documentation for what this assumes of the servers' clocks.

-- #include lib/now.lua

-- fenceNumber writes a token as an integer (a Lua number converted by
-- Redis would be written as %.14g).
local function fenceNumber(token)
  return string.format('%.0f', token)
end

-- currentFence returns the counter, or where a new one would start.
local function currentFence(fence)
  return tonumber(redis.call('get', fence)) or serverNow() * 1024
end

-- drawFence draws a token from the counter and keeps it for idle ms.
local function drawFence(fence, idle)
  local token = tonumber(redis.call('get', fence))
  if token then
    token = token + 1
  else
    token = serverNow() * 1024
  end
  redis.call('set', fence, fenceNumber(token), 'PX', idle)
  return token
end

-- raiseFence raises the counter to at least token (a quorum's choice) and
-- keeps it for at least idle ms.
local function raiseFence(fence, token, idle)
  token = tonumber(token)
  if (tonumber(redis.call('get', fence)) or 0) < token then
    redis.call('set', fence, fenceNumber(token), 'PX', idle)
  elseif redis.call('pttl', fence) < tonumber(idle) then
    redis.call('pexpire', fence, idle)
  end
end
