-- The string formats the scripts share with package core, each declared
-- once here and once in core/formats.go or internal/line/formats.go;
-- spec/formats.go documents them and its test checks this file against it.
local ticketInfix = ':t:'
local clientInfix = 'client:'
local shardInfix = ':c:'
local oneServerSecret = 'solo'
local marksNone = 0
local marksMissed = 1
local marksAll = 2
local digestHexDigits = 13
local leaseForced = -2
