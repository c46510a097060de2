-- #include lib/value.lua

-- A waiter's tokens are its stem followed by a number that grows each time
-- it gives one up, because an undo of it may still land (see
-- Ticket.Rotate in internal/line). seqOf returns the number of a token of stem; nil for
-- anyone else's, or for an empty stem.
local function seqOf(value, stem)
  if stem == '' or not value or string.sub(value, 1, #stem) ~= stem then
    return nil
  end
  return tonumber(string.match(string.sub(value, #stem + 1), '^%d+$'))
end

-- earlierOf reports whether value is a token of the waiter of stem that
-- it gave up before token.
local function earlierOf(value, stem, token)
  local seq, mine = seqOf(value, stem), seqOf(token, stem)
  return seq ~= nil and mine ~= nil and seq < mine
end

-- takeOver gives token the lock when the lock holds an earlier token of
-- the same waiter, which a release granted it, keeping its expiry, and
-- returns true then. Only earlier ones: an attempt held back on the way
-- carries an older token than the waiter's current one, so it never takes
-- the current one's lock.
local function takeOver(lock, stem, token)
  if not earlierOf(valueOf(lock), stem, token) then
    return false
  end
  redis.call('set', lock, token, 'KEEPTTL')
  return true
end

-- grantIn returns the token that a waiter's ticket value (nil for none)
-- names, which a release grants the lock to and leaves it naming as long
-- as the grant lasts (see hand_on.lua); nil for a ticket without one.
local function grantIn(value)
  if not value then
    return nil
  end
  return string.match(value, '^g:%d+:(%w+):') or string.match(value, '^m:%x+:%d+:(%w+):')
end

-- namedIn returns the token a waiter's ticket value names: its grant's
-- (see grantIn), or the one of its attempts that took the lock free
-- ("taken:<token>", see mutex_acquire.lua); nil for a ticket without one.
local function namedIn(value)
  return grantIn(value) or value and string.match(value, '^taken:(%w+)$')
end

-- superseded reports whether an attempt with token was overtaken by a
-- later one of its waiter on this server: the lock (whose value, held,
-- the caller read already), or its ticket (whose value, ticket, too; see
-- namedIn), names a later token. Such an attempt landed late (held back
-- on the way, or on another connection) and is refused: its join would
-- write an older secret over the newer one, and a grant made with it
-- would not wake the waiter.
local function superseded(held, ticket, stem, token)
  if stem == '' then
    return false
  end
  if earlierOf(token, stem, held) then
    return true
  end
  local named = namedIn(ticket)
  return named ~= nil and earlierOf(token, stem, named)
end
