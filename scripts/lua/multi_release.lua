-- Releases every name of a MultiLock lease at once (see multi_acquire.lua).
-- When it held them all and the one waiter at the head of any of their
-- queues is a MultiLock over the same names, it grants that waiter all of
-- them and tells it the fencing token (see lib/take_all.lua), so that the
-- waiter needs no request of its own. Otherwise each name is handed on to
-- its oldest waiter as release_wake.lua does, or deleted when no one
-- waits.
-- The attempt's tickets are marked as release_or_mark.lua marks one: an
-- attempt that may still be on its way must be refused when it lands, not
-- take the names for its TTL.
-- KEYS[1..] keys: for each name in order, its lock, fence, queue and tickets keys
-- and the attempt's ticket key (release_or_mark.lua's KEYS)
-- ARGV[1] token: the holder's token
-- ARGV[2] reserve: how long a reserved waiter has the lock to itself, in ms
-- ARGV[3] idle: how long the name's fencing counter lives after its last draw, in ms (see lib/fence.lua)
-- ARGV[4] left: how long a mark stays, in ms (the attempt's TTL)
-- ARGV[5] mark: which tickets to mark (see lib/left.lua): marksNone, none
-- (the undo of a queued waiter's attempt: it waits on with its tickets);
-- marksMissed, those of the names the token does not hold (an attempt with
-- tickets of its own); marksAll, every ticket (a queued waiter's lease:
-- its attempts share its token)
-- ARGV[6] tickets: the ticket ids, as multi_acquire.lua's ARGV[10]
-- Returns: the number of names that held the token and were released.

-- #include lib/hand_on.lua
-- #include lib/marks.lua
-- #include lib/ticket_ids.lua
-- #include lib/names_digest.lua
-- #include lib/take_all.lua

local held, gone, released = {}, {}, 0
local ids = ticketIDs(ARGV[6])
local mode = tonumber(ARGV[5])
-- Every name is read before the first write, so that a call over another
-- program's key under any of the names fails having written nothing: the
-- tickets it marks (their sample, see lib/marks.lua), and the line of
-- every name it writes but the first, whose own first write checks it
-- unless a mark of another name comes before it.
local function badLine(queue)
  local kind = redis.call('type', queue).ok
  if kind ~= 'zset' and kind ~= 'none' then
    return redis.error_reply('WRONGTYPE the line ' .. queue .. ' holds a ' .. kind .. ', not a sorted set: delete it')
  end
end
local firstLine -- the first name's, held and not marked: its hand-on writes it
for i = 1, #KEYS, 4 do
  held[i] = redis.call('type', KEYS[i]).ok == 'string' and redis.call('get', KEYS[i]) == ARGV[1]
  if held[i] then
    released = released + 1
  end
  local marks = mode == marksAll or mode == marksMissed and not held[i]
  if marks then
    gone[i] = lapsedTickets(KEYS[i + 3])
  end
  local bad = i > 1 and (marks or held[i]) and badLine(KEYS[i + 2])
  if bad then
    return bad
  end
  if i == 1 and held[i] and not marks then
    firstLine = KEYS[i + 2]
  end
end
local bad = firstLine and next(gone) and badLine(firstLine)
if bad then
  return bad
end
for i = 1, #KEYS, 4 do
  if gone[i] then
    redis.call('zrem', KEYS[i + 2], ids[i])
    markTicket(KEYS[i + 3], ids[i], ARGV[4], gone[i])
  end
end
if released == #KEYS / 4 then
  local same = '^m:' .. namesDigest(4) .. ':(%d+):(%w+):(%w+)$'
  local heir, at, ttl, token, secret
  local others = false
  for i = 1, #KEYS, 4 do
    local ticket, value = liveHeadIn(KEYS[i + 2], KEYS[i + 3])
    if ticket then
      local t, tok, sec = string.match(value, same)
      if tok and not heir then
        heir, at, ttl, token, secret = ticket, i, t, tok, sec
      else
        others = true
      end
    end
  end
  if heir and not others then
    -- With a malformed fencing counter, each name is handed on below
    -- instead (lib/hand_on.lua frees it and wakes the heir).
    local counters, bad = {}, nil
    for i = 1, #KEYS, 4 do
      if not bad then
        counters[i], bad = readFence(KEYS[i + 1])
      end
    end
    if not bad then
      -- The heir's ticket names the grant as long as it lasts, with no
      -- write (see ticketEnd in lib/tickets.lua).
      redis.call('zrem', KEYS[at + 2], heir)
      tell(heir, takeAll(4, token, ttl, ARGV[3], counters), secret)
      return released
    end
  end
end
for i = 1, #KEYS, 4 do
  if held[i] then
    handOn(KEYS[i], KEYS[i + 1], KEYS[i + 2], KEYS[i + 3], ARGV[2], ARGV[3])
  end
end
return released
