package driver

import (
	"context"
	"strings"
	"time"
)

// Replicated is the optional interface of a driver that can wait for a
// master's replicas to take its writes. A failover promotes a replica,
// and a write the replica did not have is lost: a lock key, a fencing
// counter's increment. Package core makes what a lease depends on reach
// the replicas before it counts a node's grant (core.WithReplicaAcks).
type Replicated interface {
	// Replicas tells how many replicas the masters behind the driver
	// have: for one server (a master, found through Sentinel or not), by
	// INFO replication, which counts its connected replicas (see
	// adapter.ParseReplication); for a Redis Cluster, by the cluster's
	// configuration, which lists every replica it may promote, failed or
	// disconnected ones too (see adapter.ParseClusterNodes).
	Replicas(ctx context.Context) (Replicas, error)

	// WaitReplicas returns once n replicas of the master that serves
	// marker's hash slot took every write that master had taken before
	// the call, or once timeout passed, and says how many did. It writes
	// marker (a key of the caller's, kept for a millisecond) and sends
	// WAIT n timeout on the same connection: WAIT waits for the writes of
	// its own connection, and the marker comes after every write before
	// it in the master's replication stream.
	WaitReplicas(ctx context.Context, marker string, n int, timeout time.Duration) (int, error)
}

// Replicas is a count of the replicas of the masters behind a driver.
type Replicas struct {
	// Connected is, for one server, how many replicas are connected to
	// it, and Master its replication ID, which a replica promoted to
	// master changes.
	Connected int
	Master    string

	// Slots is, for a Redis Cluster, the replicas of each master by the
	// hash slots it serves; nil for one server.
	Slots []SlotReplicas
}

// SlotReplicas is the number of replicas of the master that serves the
// hash slots First to Last.
type SlotReplicas struct {
	First, Last, Replicas int
}

// Of returns the replicas of the master that serves key's hash slot on a
// Cluster (0 for a slot no master serves), and Connected for one server.
func (r Replicas) Of(key string) int {
	if r.Slots == nil {
		return r.Connected
	}
	s := Slot(key)
	for _, sr := range r.Slots {
		if sr.First <= s && s <= sr.Last {
			return sr.Replicas
		}
	}
	return 0
}

// Slot is the Redis Cluster hash slot of key: CRC-16/XMODEM of its hash
// tag (the text between its first "{" and the next "}", when not empty),
// or of the whole key, modulo 16384.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := range len(key) {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
}
