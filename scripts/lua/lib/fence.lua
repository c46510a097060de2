-- A fencing counter (the key "<prefix>{name}:fence") draws the tokens of a
-- name's acquisitions: each is the counter plus one. A counter that does
-- not exist (it expired, or the node lost its data) starts again from the
-- server's clock, in milliseconds times 1024: above every token it drew
-- before, as long as it drew fewer than 1024 a millisecond on average and
-- the clock did not step back. The counter lives idle ms after its last
-- renewal, so that a name no one uses leaves nothing behind: every draw
-- and raise renews it, but a draw with one INCR (drawFence: the
-- uncontended acquisition, a hand-on) renews it only every renewEvery-th
-- token, so that it costs one command. See the package documentation for what this assumes of the
-- servers' clocks.

-- #include lib/now.lua

-- fenceLimit is 2^53: from there on a Lua number (a double) no longer
-- tells every integer from the next, so a token drawn there would repeat.
local fenceLimit = 9007199254740992

-- fenceNumber writes a token as an integer (a Lua number converted by
-- Redis would be written as %.14g).
local function fenceNumber(token)
  return string.format('%.0f', token)
end

-- badFence is the error reply for a counter that holds what no draw or
-- raise wrote: the script that finds it writes nothing.
local function badFence(fence, value)
  local held = 'a value that is not a string'
  if type(value) == 'string' then
    held = '"' .. string.gsub(string.sub(value, 1, 32), '[^%w%.%+%-]', '?') .. '"'
  end
  return redis.error_reply('BADFENCE the fencing counter ' .. fence .. ' holds ' .. held ..
    ', not a decimal integer below 2^53: delete it or set it to such an integer')
end

-- readFence returns the counter, nil when it does not exist, or nil and
-- the error reply when it holds anything but a decimal integer below 2^53
-- without a leading zero (its string is checked: tonumber would take
-- "1e20", "nan" or "1.5", and INCR, which draws from it, refuses "01").
local function readFence(fence)
  local value = redis.pcall('get', fence)
  if not value then
    return nil
  end
  if type(value) == 'string' and (value == '0' or string.match(value, '^[1-9]%d*$')) and tonumber(value) < fenceLimit then
    return tonumber(value)
  end
  return nil, badFence(fence, value)
end

-- currentFence returns the counter, or where a new one would start; or
-- nil and the error reply (see readFence).
local function currentFence(fence)
  local token, bad = readFence(fence)
  if bad then
    return nil, bad
  end
  return token or serverNow() * 1024
end

-- renewEvery is how many tokens drawFence draws between two renewals of
-- the counter's expiry: a counter then starts again at least idle ms
-- after it drew all but the last renewEvery of its tokens.
local renewEvery = 64

-- startFence starts a counter from the server's clock, for idle ms.
local function startFence(fence, idle)
  local token = serverNow() * 1024 -- TIME only to start a counter
  redis.call('set', fence, fenceNumber(token), 'PX', idle)
  return token
end

-- drawnFrom draws a token from the counter that readFence read and keeps
-- it for idle ms.
local function drawnFrom(fence, counter, idle)
  if not counter then
    return startFence(fence, idle)
  end
  redis.call('set', fence, fenceNumber(counter + 1), 'PX', idle)
  return counter + 1
end

-- drawFence draws a token from the counter with one INCR where it
-- exists, renewing its expiry every renewEvery-th token; or returns nil
-- and the error reply (see readFence), with the counter as it was: INCR
-- refuses what is not an integer, and an increment of one outside
-- [0, 2^53) is taken back.
local function drawFence(fence, idle)
  local token = redis.pcall('incr', fence)
  if type(token) ~= 'number' then
    return nil, badFence(fence, redis.pcall('get', fence))
  end
  if token == 1 then -- there was none (or a 0, which no draw writes)
    return startFence(fence, idle)
  end
  if token < 1 or token >= fenceLimit then
    redis.call('decr', fence)
    return nil, badFence(fence, redis.pcall('get', fence))
  end
  if token % renewEvery == 0 then
    redis.call('pexpire', fence, idle)
  end
  return token
end

-- raiseFence raises the counter to at least token (a quorum's choice) and
-- keeps it for at least idle ms; or writes nothing and returns the error
-- reply (see readFence).
local function raiseFence(fence, token, idle)
  local counter, bad = readFence(fence)
  if bad then
    return bad
  end
  token = tonumber(token)
  if (counter or 0) < token then
    redis.call('set', fence, fenceNumber(token), 'PX', idle)
  elseif redis.call('pttl', fence) < tonumber(idle) then
    redis.call('pexpire', fence, idle)
  end
end
