-- #include lib/purge.lua
-- #include lib/value.lua

-- isMutexTicket reports whether value is what a Mutex waiter's ticket
-- holds and hand_on.lua can use: a grant "g:<ttl>:<token>:<secret>", a
-- MultiLock grant "m:<names>:<ttl>:<token>:<secret>", or anything else for
-- a waiter that is only reserved the lock; not the mark of an attempt that
-- took the lock free ("taken:<token>"), which no waiter is.
local function isMutexTicket(value)
  if string.sub(value, 1, 6) == 'taken:' then
    return false
  end
  local kind = string.sub(value, 1, 2)
  if kind == 'g:' then
    return isCount(string.match(value, '^g:(%d+):%w+:%w+$'))
  elseif kind == 'm:' then
    return isCount(string.match(value, '^m:%x+:(%d+):%w+:%w+$'))
  end
  return true
end

-- semaphoreTicket returns what a Semaphore waiter's ticket holds: how
-- many permits it wants, the secret that keys its wake-ups' MAC, and its
-- place in line, which its first join gave ("<n>:<secret>:<place>";
-- "<n>:<secret>" and "<n>" from earlier versions, with no place or
-- secret); nil for anything else. A place that is no count (isCount: one
-- too large for a score exactly, that another program wrote) is none: the
-- waiter joins at the place it would get without one.
local function semaphoreTicket(value)
  value = value or ''
  local n, secret, place = string.match(value, '^(%d+):(%w*):(%d+)$')
  if not n then
    n, secret = string.match(value, '^(%d+):(%w*)$')
    n = n or string.match(value, '^(%d+)$')
  end
  if isCount(n) then
    if not isCount(place) then
      place = nil
    end
    return n, secret, place
  end
  return nil
end

local function isSemaphoreTicket(value)
  return semaphoreTicket(value) ~= nil
end
