package adapter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redlockgo/redlock/driver"
)

// ParseReplication reads an INFO replication reply: how many replicas
// are connected to the server if it is a master (0 if it is a replica),
// and its replication ID, which a replica promoted to master changes.
func ParseReplication(info string) (driver.Replicas, error) {
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	var r driver.Replicas
	switch fields["role"] {
	case "master":
		n, err := strconv.Atoi(fields["connected_slaves"])
		if err != nil {
			return r, fmt.Errorf("%w: INFO replication of a master has connected_slaves %q", driver.ErrUnexpectedReply, fields["connected_slaves"])
		}
		r.Connected = n
	case "slave", "replica":
	default:
		return r, fmt.Errorf("%w: INFO replication has role %q", driver.ErrUnexpectedReply, fields["role"])
	}
	r.Master = fields["master_replid"]
	return r, nil
}

// ParseClusterNodes reads a CLUSTER NODES reply: the replicas of each
// master by the slots it serves. Every replica the configuration lists
// counts, whatever its flags (fail, fail?, disconnected): the cluster may
// still promote it, and CLUSTER SLOTS and CLUSTER SHARDS leave some of
// them out.
func ParseClusterNodes(nodes string) (driver.Replicas, error) {
	replicas := map[string]int{} // by master ID
	served := map[string][]string{}
	// RESP3 sends the reply as a verbatim string, whose format some clients keep.
	for line := range strings.Lines(strings.TrimPrefix(nodes, "txt:")) {
		// <id> <addr> <flags> <master id> <ping> <pong> <epoch> <link> <slot>...
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return driver.Replicas{}, fmt.Errorf("%w: CLUSTER NODES has the line %q", driver.ErrUnexpectedReply, line)
		}
		flags := strings.Split(f[2], ",")
		switch {
		case slices.Contains(flags, "master"):
			served[f[0]] = f[8:]
		case (slices.Contains(flags, "slave") || slices.Contains(flags, "replica")) && f[3] != "-":
			replicas[f[3]]++
		}
	}
	r := driver.Replicas{Slots: []driver.SlotReplicas{}}
	for id, slots := range served {
		for _, s := range slots {
			if strings.HasPrefix(s, "[") { // a slot migrating or importing: its owner is listed too
				continue
			}
			first, last, _ := strings.Cut(s, "-")
			if last == "" {
				last = first
			}
			a, err1 := strconv.Atoi(first)
			b, err2 := strconv.Atoi(last)
			if err1 != nil || err2 != nil {
				return driver.Replicas{}, fmt.Errorf("%w: CLUSTER NODES lists the slots %q", driver.ErrUnexpectedReply, s)
			}
			r.Slots = append(r.Slots, driver.SlotReplicas{First: a, Last: b, Replicas: replicas[id]})
		}
	}
	return r, nil
}
