-- #include lib/ticket_values.lua
-- #include lib/tickets.lua

-- liveHeadIn returns the oldest member of queue that is an id of tickets
-- (lib/tickets.lua) holding a value valid(value) accepts (by default a
-- Mutex ticket's, lib/ticket_values.lua), and that value; nil when no one
-- waits. It drops the members before it, at most purgeLimit of them in
-- one call (with more it returns nil, as if no one waited, and a later
-- call goes on: a waiter behind them retries at the holder's TTL), and
-- the fields of those whose ticket lapsed.
local function liveHeadIn(queue, tickets, valid)
  valid = valid or isMutexTicket
  local value
  local lapsed = {}
  local head = firstAlive(byRank(queue), function(member)
    if not isTicketOf(tickets, member) then
      return false
    end
    value = ticketIn(tickets, member)
    if value == nil then
      lapsed[#lapsed + 1] = member
      return false
    end
    return valid(value)
  end, queue)
  if #lapsed > 0 then
    redis.pcall('hdel', tickets, unpack(lapsed))
  end
  if head then
    return head, value
  end
  return nil
end

-- popLiveHeadIn is liveHeadIn (for Mutex tickets) that also takes the
-- head out of the queue: one ZPOPMIN where the first ticket is live, the
-- common case, or none where the caller made it already (popped, its
-- reply); it also returns the head's score, for a caller that puts it
-- back.
local function popLiveHeadIn(queue, tickets, popped)
  local first = popped or redis.call('zpopmin', queue)
  if #first == 0 then
    return nil
  end
  local ticket, score = first[1], first[2]
  if isTicketOf(tickets, ticket) then
    local value = ticketIn(tickets, ticket)
    if value ~= nil and isMutexTicket(value) then
      return ticket, value, score
    end
    if value == nil then
      redis.pcall('hdel', tickets, ticket)
    end
  end
  local value
  ticket, value = liveHeadIn(queue, tickets)
  if not ticket then
    return nil
  end
  score = redis.call('zscore', queue, ticket)
  redis.call('zrem', queue, ticket)
  return ticket, value, score
end
