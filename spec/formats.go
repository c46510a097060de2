package spec

// Format is a string shape that package core and the scripts both rely
// on: core writes what a script parses, or the reverse. Each side declares
// it once, core in core/formats.go (those of tickets and channels in
// internal/line/formats.go) and the scripts in lib/formats.lua; the
// spec and core tests check both against this list, so neither side can
// change one alone.
type Format struct {
	Name  string // the name on both sides: a Go constant and a Lua local
	Value string // the Go constant's value; the Lua local's, quoted unless a number
	Doc   string
}

// Formats are the shapes shared by core and the scripts.
var Formats = []Format{
	{"ticketInfix", ":t:", "a waiter's ticket key is its primitive's key, this, the Client's id, ':' and a random part: the scripts find the Client's channel from it"},
	{"clientInfix", "client:", "the channel a Client hears its waiters' grants on is the key prefix (a ticket key's part before its first '{'), this and the Client's id; a grant is the message \"<fence> <mac> <ticket>\", the MAC keyed by the secret in the ticket"},
	{"shardInfix", ":c:", "on a Cluster the scripts tell a Client's waiter first on the channel of the ticket key's part before ticketInfix, this and the Client's id: sharded with the lock (SPUBLISH), in its slot"},
	{"oneServerSecret", "solo", "a waiter's secret on a node that is one server starts with this: there the scripts tell it on the Client's own channel (clientInfix) alone, with one PUBLISH, as no Client subscribes a sharded channel there"},
	{"marksNone", "0", "how a release marks its attempt's tickets (multi_release.lua's mark, lib/left.lua): none, for the undo of a queued waiter's attempt, which waits on with them"},
	{"marksMissed", "1", "how a release marks its attempt's tickets: those of the names its token does not hold, for an attempt with tickets of its own"},
	{"marksAll", "2", "how a release marks its attempt's tickets: all, for a queued waiter's lease, whose attempts share its token"},
	{"leaseForced", "-2", "what the scripts that confirm a plain lock's lease (extend.lua, lock_ttl.lua, the releases) answer for a token whose hold a force-release freed (lib/forced.lua)"},
	{"digestHexDigits", "13", "a Semaphore lease's slots are known by a digest of 13 hex digits (52 bits), exact in a Lua double and an int64; core draws its scan seeds below 2^52 too"},
}
