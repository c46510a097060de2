-- lengthen sets key's expiry to ms milliseconds unless it lasts longer
-- already: what a script that may land late (an attempt or an extension
-- whose reply timed out) does to a key a lease holds, so that it never
-- cuts short an expiry that a later call set.
local function lengthen(key, ms)
  if redis.call('pttl', key) < tonumber(ms) then
    redis.call('pexpire', key, ms)
  end
end
