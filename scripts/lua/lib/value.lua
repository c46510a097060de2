-- valueOf returns key's value when it holds a string, nil otherwise: one
-- GET, whose WRONGTYPE error (a reentrant lock's hash under the name, or
-- another program's data) it catches, where TYPE and GET would take two.
local function valueOf(key)
  local value = redis.pcall('get', key)
  if type(value) == 'string' then
    return value
  end
  return nil
end
