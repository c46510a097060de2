-- #include lib/tell.lua

-- A release passes over at most deafClients Clients and passLimit tickets.
local deafClients, passLimit = 4, 16

-- passDeaf offers the waiters that nextHead returns (ticket, value, place;
-- nil when no one waits), first in line first, to try until try returns
-- true (it told one, or was done). A waiter that try found surely deaf
-- (tell returned false: on a node that is one server, its Client no
-- longer listens) is passed over, and so are the other tickets of its
-- Client (a process that died waiting with several goroutines); drop
-- takes each passed over out of line, where nextHead does not. It
-- returns false when it passed over all it found, or reached its limits.
local function passDeaf(nextHead, try, drop)
  local deaf, found = {}, 0
  for _ = 1, passLimit do
    if found == deafClients then
      break
    end
    local ticket, value, place = nextHead()
    if not ticket then
      break
    end
    local client = clientOf(ticket) or ''
    if not deaf[client] then
      if try(ticket, value, place) then
        return true
      end
      deaf[client] = true
      found = found + 1
    end
    if drop then
      drop(ticket)
    end
  end
  return false
end
