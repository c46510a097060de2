-- ticketIDs reads the ticket ids of a MultiLock's names from the argument
-- list: for each name, its ticket id without the name's tickets key and
-- ":" (a Client id and a random part, or a random part, in base32; empty
-- for an attempt without a ticket there), separated by spaces. It returns
-- them by the index of the name's first key in KEYS (1, 5, 9, ...), whose
-- fourth is the tickets key; a name the list leaves out has none.
local function ticketIDs(list)
  local rests = {}
  for rest in string.gmatch(list .. ' ', '([^ ]*) ') do
    rests[#rests + 1] = rest
  end
  local ids = {}
  for i = 1, #KEYS, 4 do
    ids[i] = KEYS[i + 3] .. ':' .. (rests[(i + 3) / 4] or '')
  end
  return ids
end
