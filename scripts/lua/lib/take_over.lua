-- A waiter that gave up tokens, because an undo of one may still land
-- (see core's ticket.rotate), takes over with its new token what a release
-- granted one of them: takeOver gives token the lock when the lock holds
-- one of earlier (the tokens the attempt says its waiter gave up, space
-- separated), keeping its expiry, and returns true then. Only the attempt
-- names them: an attempt held back on the way names older tokens than the
-- waiter's current one, so it can never take the current one's lock.

local function takeOver(lock, earlier, token)
  if earlier == '' or redis.call('type', lock).ok ~= 'string' then
    return false
  end
  local holder = redis.call('get', lock)
  for t in string.gmatch(earlier, '%S+') do
    if t == holder then
      redis.call('set', lock, token, 'KEEPTTL')
      return true
    end
  end
  return false
end
