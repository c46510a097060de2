package adapter

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/redlockgo/redlock/driver"
)

// ParseReplication reads an INFO replication reply: how many replicas
// are connected to the server if it is a master (0 if it is a replica),
// and its replication ID, which a replica promoted to master changes.
func ParseReplication(info string) (replicas int, id string, err error) {
	fields := map[string]string{}
	for line := range strings.Lines(info) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
			fields[k] = v
		}
	}
	switch fields["role"] {
	case "master":
		replicas, err = strconv.Atoi(fields["connected_slaves"])
		if err != nil {
			return 0, "", fmt.Errorf("%w: INFO replication of a master has connected_slaves %q", driver.ErrUnexpectedReply, fields["connected_slaves"])
		}
	case "slave", "replica":
	default:
		return 0, "", fmt.Errorf("%w: INFO replication has role %q", driver.ErrUnexpectedReply, fields["role"])
	}
	return replicas, fields["master_replid"], nil
}
