package driver

import (
	"context"
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
	// the replicas the cluster marked as failed, with master ""; for one
	// server (a master, found through Sentinel or not), by INFO
	// replication, which counts its connected replicas, with master its
	// replication ID (see ParseReplication).
	Replicas(ctx context.Context) (count int, master string, err error)

	// WaitReplicas returns once n replicas of the master that serves
	// marker's hash slot took every write that master had taken before
	// the call, or once timeout passed, and says how many did. It writes
	// marker (a key of the caller's, kept for a millisecond) and sends
	// WAIT n timeout on the same connection: WAIT waits for the writes of
	// its own connection, and the marker comes after every write before
	// it in the master's replication stream.
	WaitReplicas(ctx context.Context, marker string, n int, timeout time.Duration) (int, error)
}
