package line

import (
	"strconv"
	"strings"
	"testing"
)

// FuzzHandOffMessage delivers arbitrary messages, on the Client's own
// channel and on others, from any of three nodes, to a Client with one
// queued ticket whose last attempt stored a secret on each node: a grant
// is heard only from a message that names the ticket and a positive
// fencing token and carries their MAC by the secret of the node it came
// from, and nothing panics. A message names the MAC of its own first
// field and the ticket by a node's secret by a placeholder, ${0}, ${1} or
// ${2}, replaced before delivery. Its seeds run in every go test; to fuzz:
//
//	go test -run '^$' -fuzz FuzzHandOffMessage -fuzztime 30s ./internal/line/
func FuzzHandOffMessage(f *testing.F) {
	c := newTestNotifier(f, 3)
	// The Client's channel for its prefix, and its name's sharded channel.
	own, shard, ticketKey := c.channel("redlock:"), "redlock:{n}:c:cid", "redlock:{n}:t:cid:R"
	for _, seed := range []struct {
		node             uint8
		channel, message string
	}{
		{0, own, "7 ${0} " + ticketKey},
		{1, own, "7 ${0} " + ticketKey},
		{2, own, "7 ${2}" + ticketKey},
		{1, own, "999 forged " + ticketKey},
		{1, own, "999 ${0} " + ticketKey},
		{2, own, "999 " + ticketKey},
		{0, own, "0 ${0} " + ticketKey},
		{1, own, "-5 ${1} " + ticketKey},
		{2, own, "99999999999999999999 ${2} " + ticketKey},
		{0, own, "7 ${0} " + ticketKey + " extra"},
		{1, "redlock:client:other", "7 ${1} " + ticketKey},
		{1, "other:client:cid", "7 ${1} " + ticketKey},
		{1, "client:cid", "7 ${1} " + ticketKey},
		{0, shard, "7 ${0} " + ticketKey},
		{0, "redlock:{m}:c:cid", "7 ${0} " + ticketKey},
		{2, "__keyspace@0__:redlock:{n}", "del"},
		{200, own, "7 ${2} " + ticketKey},
		{0, own, ""},
	} {
		f.Add(seed.node, seed.channel, seed.message)
	}
	f.Fuzz(func(t *testing.T, node uint8, channel, message string) {
		n := newTestNotifier(t, 3)
		tk := n.Register(ticketKey, "token", nil)
		tk.Grants.Expect()
		at := int(node) % len(c.g.Nodes)
		fence, _, _ := strings.Cut(message, " ")
		for i := range c.g.Nodes {
			message = strings.ReplaceAll(message, "${"+strconv.Itoa(i)+"}", macHex(tk.Grants.Secret(i), fence+" "+ticketKey))
		}
		n.deliverer(at, "__keyspace@0__:")(channel, message)

		fence, rest, _ := strings.Cut(message, " ")
		f, err := strconv.ParseInt(fence, 10, 64)
		genuine := (channel == own || channel == shard) && err == nil && f > 0 &&
			rest == macHex(tk.Grants.Secret(at), fence+" "+ticketKey)+" "+ticketKey
		for i, heard := range tk.Grants.heard {
			switch {
			case heard != 0 && !genuine:
				t.Fatalf("message %q on %q made node %d's grant %d heard", message, channel, i, heard)
			case genuine && i == at && heard != f:
				t.Fatalf("grant %q on node %d: heard %d, want %d", message, at, heard, f)
			}
		}
	})
}
