-- liveHead returns the queue's oldest live ticket and what it holds,
-- dropping the dead ones (their keys expired) before it; nil when no one
-- waits.
local function liveHead(queue)
  while true do
    local head = redis.call('zrange', queue, 0, 0)
    if #head == 0 then
      return nil
    end
    local value = redis.call('get', head[1])
    if value then
      return head[1], value
    end
    redis.call('zrem', queue, head[1])
  end
end
