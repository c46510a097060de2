package driver

import (
	"context"
	"fmt"
	"time"
)

// Replicated is the optional interface of a driver that can wait for a
// master's replicas to take its writes. A failover promotes a replica,
// and a write the replica did not have is lost: a lock key, a fencing
// counter's increment. Package core makes what a lease depends on reach
// the replicas before it counts a node's grant (core.WithReplicaAcks).
type Replicated interface {
	// Replicas returns the fewest replicas that a master behind the
	// driver has: for a Redis Cluster, by CLUSTER SLOTS, which leaves out
	// the replicas the cluster marked as failed; for one server (a master,
	// found through Sentinel or not), by ROLE, which lists its connected
	// replicas.
	Replicas(ctx context.Context) (int, error)

	// WaitReplicas returns once n replicas of the master that serves
	// marker's hash slot took every write that master had taken before
	// the call, or once timeout passed, and says how many did. It writes
	// marker (a key of the caller's, kept for a millisecond) and sends
	// WAIT n timeout on the same connection: WAIT waits for the writes of
	// its own connection, and the marker comes after every write before
	// it in the master's replication stream.
	WaitReplicas(ctx context.Context, marker string, n int, timeout time.Duration) (int, error)
}

// ReplicasInRole counts the replicas in a ROLE reply: a master's is
// "master", its replication offset and one entry per connected replica.
// A replica or a sentinel has none of its own.
func ReplicasInRole(role []any) (int, error) {
	if len(role) == 0 {
		return 0, fmt.Errorf("%w: ROLE returned nothing", ErrUnexpectedReply)
	}
	kind, _ := role[0].(string)
	if b, ok := role[0].([]byte); ok {
		kind = string(b)
	}
	if kind != "master" {
		return 0, nil
	}
	if len(role) < 3 {
		return 0, fmt.Errorf("%w: ROLE of a master returned %d fields, want 3", ErrUnexpectedReply, len(role))
	}
	replicas, ok := role[2].([]any)
	if !ok && role[2] != nil {
		return 0, fmt.Errorf("%w: ROLE's replicas are a %T, want an array", ErrUnexpectedReply, role[2])
	}
	return len(replicas), nil
}
