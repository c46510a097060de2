-- #include lib/formats.lua
-- #include lib/tickets.lua

-- The marks of lib/left.lua, on a line's tickets hash (lib/tickets.lua):
-- the ticket holds "left" until the mark's deadline.

-- markTicket marks ticket id as left for ms, and drops a few lapsed
-- tickets (see lapsedTickets): marks are what a busy name adds most. A
-- caller that writes other keys first passes the sample (gone) it took
-- before them. The drop comes before the mark: the sample may hold id.
local function markTicket(tickets, id, ms, gone)
  gone = gone or lapsedTickets(tickets)
  dropTickets(tickets, gone)
  putTicket(tickets, id, 'left', ms, gone.kept)
end

-- isMark reports whether a ticket's value (nil for none) is a mark.
local function isMark(value)
  return value == 'left' or value == 'left:id'
end

local function ticketLeft(tickets, id)
  return isMark(ticketIn(tickets, id))
end

-- keepTicketMark lengthens a mark to last at least ms more (see keepMark
-- in lib/left.lua).
local function keepTicketMark(tickets, id, ms)
  local value, deadline = ticketIn(tickets, id)
  if isMark(value) and deadline < ticketNow() + tonumber(ms) then
    putTicket(tickets, id, value, ms)
  end
end

-- markOnReleaseIn is markOnRelease of lib/left.lua on a tickets hash.
local function markOnReleaseIn(mode, held, queue, tickets, id, ms)
  mode = tonumber(mode)
  if mode == marksAll or mode == marksMissed and not held then
    local gone = lapsedTickets(tickets) -- before the first write (see markTicket)
    redis.call('zrem', queue, id)
    markTicket(tickets, id, ms, gone)
  end
end
