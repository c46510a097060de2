package core

import (
	"strings"

	"github.com/redlockgo/redlock/internal/line"
)

// The formats core shares with the scripts (those of tickets and channels
// are internal/line's), each declared once here and once in
// scripts/lua/lib/formats.lua; spec/formats.go documents
// them, and a test checks both sides against it.
const (
	digestHexDigits = 13 // a Semaphore lease's slot digest: 52 bits
)

// How a release marks its attempt's tickets (see mutexHold.release).
const (
	marksNone   = 0 // the undo of a queued waiter's attempt: it waits on with them
	marksMissed = 1 // tickets of its own: those of the names the token does not hold
	marksAll    = 2 // a queued waiter's lease: its attempts share its token
)

// leaseForced is what the scripts that confirm a plain lock's lease
// answer for a token whose hold a force-release freed (see lib/forced.lua).
const leaseForced = -2

// digestBound bounds slot digests and scan seeds: 2^52, exact in a Lua
// double.
const digestBound = 1 << (4 * digestHexDigits)

// ticketInfix is where a waiter's ticket key names its Client (see
// line.TicketInfix).
const ticketInfix = line.TicketInfix

// ticketKeys are a line's tickets hash, "<prefix>{name}<kind>:t", and
// how the ids of its fields start: the hash's name and ':'.
type ticketKeys struct {
	tickets, ids string
}

func newTicketKeys(k func(suffix string) string, kind string) ticketKeys {
	ids := k(kind + ticketInfix)
	return ticketKeys{tickets: strings.TrimSuffix(ids, ":"), ids: ids}
}
