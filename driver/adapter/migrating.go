package adapter

import (
	"fmt"
	"strings"
)

// Redirect returns the address in a Redis Cluster node's MOVED or ASK
// error reply, and whether it is an ASK: the node that answered migrates
// the key's slot to that address and no longer holds the key.
func Redirect(err error) (addr string, ask, ok bool) {
	if err == nil {
		return "", false, false
	}
	fields := strings.Fields(err.Error())
	if len(fields) != 3 || fields[0] != "MOVED" && fields[0] != "ASK" {
		return "", false, false
	}
	return fields[2], fields[0] == "ASK", true
}

// MarkerBeside is the i-th replica marker under marker's prefix in a slot
// of its own: a master migrating marker's slot refuses to write marker
// (ASK), but takes one of these where it serves its slot.
func MarkerBeside(marker string, i int) string {
	prefix, _, _ := strings.Cut(marker, "{")
	return fmt.Sprintf("%s{acked:%d}", prefix, i)
}

// MarkersBeside is how many markers of MarkerBeside a driver tries on a
// master: with three masters, one in three serves a marker's slot.
const MarkersBeside = 64
