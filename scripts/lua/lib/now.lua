-- serverNow is the server's time in milliseconds: what expiries are
-- measured against, whatever the clients' clocks say.
local function serverNow()
  local t = redis.call('time')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
