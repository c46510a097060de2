-- #include lib/now.lua

-- A line's tickets are fields of one hash beside its queue, with the same
-- hash tag ("<prefix>{<name>}:t" for a Mutex's queue "...:q"), which the
-- caller passes in KEYS: a script opens no key it found in a queue, so it
-- runs whole on a Redis Cluster whose slot migrates, under ACL key
-- patterns, and as a Function. A ticket's id is the hash's name, ":" and
-- the rest core makes ("<client id>:<random>" for a queued waiter, where
-- tell.lua finds the Client; "<random>" for an attempt's own ticket); the
-- queue's members are ids. A field holds "<deadline>:<value>", the
-- deadline in server ms: Redis 7.0 has no expiry per field, so a ticket
-- whose deadline passed is read as absent, and the hash expires whole no
-- earlier than its latest deadline (only ever lengthened), so that an
-- idle name leaves nothing.

local ticketClock

-- ticketNow is the server's time, read once per script call: one TIME,
-- paid only by a call that finds a ticket or writes one.
local function ticketNow()
  if not ticketClock then
    ticketClock = serverNow()
  end
  return ticketClock
end

-- ticketEnd is when a ticket holding value until deadline stops naming
-- what it holds: its deadline; for a grant ("g:<ttl>:..." or
-- "m:<names>:<ttl>:...", see hand_on.lua), ttl later. A hand-on grants the
-- ticket before its deadline, for ttl, and writes nothing to it: the
-- ticket names the grant's token as long as the grant lasts (see
-- take_over.lua), which the waiter's join pays for.
local function ticketEnd(value, deadline)
  local ttl = string.match(value, '^g:(%d+):') or string.match(value, '^m:%x+:(%d+):')
  return deadline + (tonumber(ttl) or 0)
end

-- ticketIn returns what ticket id holds in tickets and its deadline; nil
-- when it holds nothing, its deadline passed, or tickets is no hash
-- (another program's data, which the scripts leave alone). A caller that
-- writes tickets later reads strictly: another type then fails the call
-- here, before its first write. One that reads the grant a ticket names
-- (granted) reads it, and gets its deadline, until ticketEnd.
local function ticketIn(tickets, id, strict, granted)
  local field
  if strict then
    field = redis.call('hget', tickets, id)
  else
    field = redis.pcall('hget', tickets, id)
  end
  if type(field) ~= 'string' then
    return nil
  end
  local deadline, value = string.match(field, '^(%d+):(.*)$')
  if not deadline then
    return nil
  end
  deadline = tonumber(deadline)
  if granted then
    deadline = ticketEnd(value, deadline)
  end
  if deadline <= ticketNow() then
    return nil
  end
  return value, deadline
end

-- outlive makes key live at least ms more: GT lengthens an expiry, NX
-- gives one to a key that has none (a hash the HSET before made).
local function outlive(key, ms)
  if redis.call('pexpire', key, ms, 'GT') == 0 then
    redis.call('pexpire', key, ms, 'NX')
  end
end

-- ticketsSample is how many fields a write of a mark looks at, at random,
-- to drop those whose deadline passed: a name that never goes idle keeps
-- its hash, and each release of a waiter's lease adds a mark. Each write
-- adds at most one field that will lapse and drops a lapsed one with
-- probability (lapsed fields / all fields) per field sampled, so lapsed
-- fields stay below a third of the live ones on average, in O(1) per call.
local ticketsSample = 4

-- lapsedTickets samples tickets for fields whose deadline passed, which
-- dropTickets then drops. The sample reads only: a caller that takes it
-- before its first write fails, on a tickets key of another type, having
-- written nothing. gone.kept tells that a field sampled is within its
-- deadline: the hash outlives the call, with the expiry that the script
-- that made it gave it. A grant read past its ticket's deadline does not
-- tell so: a hand-on in the same call drops a queued ticket past its
-- deadline (see liveHeadIn), and the hash with it when it was the last.
local function lapsedTickets(tickets)
  local sample = redis.call('hrandfield', tickets, ticketsSample, 'WITHVALUES')
  local now, gone = ticketNow(), {kept = false}
  for i = 1, #sample, 2 do
    local deadline, value = string.match(sample[i + 1], '^(%d+):(.*)$')
    deadline = tonumber(deadline)
    if not deadline or ticketEnd(value, deadline) <= now then
      gone[#gone + 1] = sample[i]
    elseif deadline > now then
      gone.kept = true
    end
  end
  return gone
end

local function dropTickets(tickets, gone)
  if #gone > 0 then
    redis.call('hdel', tickets, unpack(gone))
  end
end

-- putTicket makes ticket id hold value for ms from now, and tickets live
-- as long. Where the caller knows the hash was there (kept, see
-- lapsedTickets), it has an expiry, which one PEXPIRE GT lengthens.
local function putTicket(tickets, id, value, ms, kept)
  ms = tonumber(ms)
  redis.call('hset', tickets, id, string.format('%.0f', ticketNow() + ms) .. ':' .. value)
  if kept then
    redis.call('pexpire', tickets, ms, 'GT')
  else
    outlive(tickets, ms)
  end
end

-- isTicketOf reports whether member of a queue is an id of tickets.
local function isTicketOf(tickets, member)
  return #member > #tickets + 1 and string.sub(member, 1, #tickets + 1) == tickets .. ':'
end
