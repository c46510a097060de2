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
-- many permits it wants and the secret that keys its wake-ups' MAC
-- ("<n>:<secret>"; "<n>" from an earlier version, with no secret); nil
-- for anything else.
local function semaphoreTicket(value)
  local n, secret = string.match(value or '', '^(%d+):(%w*)$')
  n = n or string.match(value or '', '^(%d+)$')
  if isCount(n) then
    return n, secret
  end
  return nil
end

local function isSemaphoreTicket(value)
  return semaphoreTicket(value) ~= nil
end

-- liveHead returns the queue's oldest live ticket and what it holds; nil
-- when no one waits. A release writes to a ticket and publishes on its
-- name, so it takes only what a waiter of this queue writes: a string key
-- under the queue's own ticket prefix (the queue key with its final "q"
-- made "t:", as core names them) holding a value valid(value) accepts
-- (by default a Mutex ticket's). It drops what is not, and the tickets
-- that expired, at most purgeLimit of them in one call: with more, it
-- returns nil as if no one waited, and a later call goes on. (A waiter
-- behind that many dead tickets is not told; it retries at the holder's
-- TTL.)
local function liveHead(queue, valid)
  valid = valid or isMutexTicket
  local prefix = string.sub(queue, 1, -2) .. 't:'
  local value
  local head = firstAlive(byRank(queue), function(member)
    if #member > #prefix and string.sub(member, 1, #prefix) == prefix then
      value = valueOf(member)
      return value ~= nil and valid(value)
    end
    return false
  end, queue)
  if head then
    return head, value
  end
  return nil
end
