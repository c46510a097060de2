package quorum

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// Node is one driver with what was learned about its server. The natives
// map is the one place that decides whether a native command replaces a
// script; the primitives never look at the driver's or the server's name.
type Node struct {
	Index        int // in Group.Nodes
	Driver       driver.Driver
	SingleServer bool // one script may touch any keys (driver.SingleServer)
	Cluster      bool // a Redis Cluster (or a Ring): SingleServer is false

	log         *slog.Logger
	answered    atomic.Int64      // when it last answered a call (Unix ns), error replies too; 0 never
	replicated  driver.Replicated // nil when the driver cannot wait for replicas
	replicaAcks int               // WithReplicaAcks; -1: acksProbed
	acksProbed  atomic.Int32      // the most replicas a grant waits for, as probed; -1 not yet
	acksCounted atomic.Int64      // when acksProbed was probed (Unix ns)
	acksCount   driver.Replicas   // under mu: the replicas counted then
	acksMaster  string            // under mu: the replication ID acksFloor was counted on
	acksFloor   int               // under mu: the most replicas counted on acksMaster

	mu      sync.Mutex
	natives map[driver.Native]bool // probed so far: supported or not
}

// has reports whether the server runs native n, probing it the first time
// on a key next to key, which the library never writes (so the probe
// changes nothing), under key's prefix and hash tag (so a user allowed
// only the keys under its prefix may probe it). A probe that fails for a
// reason other than the server's answer (a timeout, a dropped connection)
// is not remembered and is tried again.
func (n *Node) has(ctx context.Context, native driver.Native, key string) bool {
	n.mu.Lock()
	ok, known := n.natives[native]
	n.mu.Unlock()
	if known {
		return ok
	}
	pctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	err := driver.Probe(pctx, n.Driver, native, key+":probe")
	if err != nil && !n.Driver.IsServerError(err) {
		return false
	}
	n.mu.Lock()
	n.natives[native] = err == nil
	n.mu.Unlock()
	n.log.Debug("redlock: native command probed", "driver", n.Driver.Name(), "command", string(native), "supported", err == nil)
	return err == nil
}

// Release deletes key when it holds token, natively where the server can.
func (n *Node) Release(ctx context.Context, key, token string) (int64, error) {
	var v int64
	var err error
	switch {
	case n.has(ctx, driver.NativeReleaseDelifeq, key):
		v, err = n.Driver.ReleaseDelifeq(ctx, key, token)
	case n.has(ctx, driver.NativeReleaseDelex, key):
		v, err = n.Driver.ReleaseDelex(ctx, key, token)
	default:
		v, err = n.Driver.Release(ctx, key, token)
	}
	return v, notHeldOnWrongType(err)
}

// Extend lengthens a plain lock that token holds, and the mark of its
// attempt (ticket, a field of tickets), in one script that first reads the lock's forced
// marker; on a Cluster whose slot migrates with the keys on different
// masters (TRYAGAIN), the lock and the mark one after the other, the
// marker unread, so that a lease outlives a migration longer than its
// TTL. The mark goes
// first, and for twice the TTL: a lock lengthened without its mark would
// let a late copy of the attempt take the name again after the release,
// and the lock's extension may land late.
func (n *Node) Extend(ctx context.Context, lock, tickets, ticket, forced, token string, ttl time.Duration) (int64, error) {
	v, err := n.Driver.Extend(ctx, lock, tickets, forced, token, ttl, ticket)
	if !n.Cluster || !driver.IsTryAgain(err) {
		return v, err
	}
	if _, err := n.Driver.KeepMark(ctx, tickets, 2*ttl, ticket); err != nil {
		return 0, err
	}
	return n.Driver.ExtendLock(ctx, lock, token, ttl)
}

// notHeldOnWrongType maps a native command's WRONGTYPE (the name is held
// as a reentrant lock, a hash, by someone else) to "not held here".
func notHeldOnWrongType(err error) error {
	if driver.IsWrongType(err) {
		return nil
	}
	return err
}

// failoverWindow is how long after a Cluster node last answered a
// connection to it that is refused or broke counts as a failover in
// progress: Redis Cluster promotes a replica once its master has not
// answered for cluster-node-timeout (15s by default), after an election.
// A node that never answered, or not for longer, is down, and the calls
// fail with ErrNoQuorum as they do on independent masters.
const failoverWindow = 30 * time.Second

// heard notes a call's outcome: an answer, if the server replied. A
// connection to a Cluster node that broke may be a failover, after which
// a master has other replicas: they are counted again.
func (n *Node) heard(err error) {
	if err == nil || n.Driver.IsServerError(err) {
		n.answered.Store(time.Now().UnixNano())
	} else if n.Cluster && driver.IsBrokenConnection(err) {
		n.acksProbed.Store(-1)
	}
}

// failingOver reports a connection to a Cluster node that was refused or
// broke within failoverWindow of its last answer.
func (n *Node) failingOver(err error) bool {
	last := n.answered.Load()
	return n.Cluster && last != 0 && time.Since(time.Unix(0, last)) < failoverWindow && driver.IsBrokenConnection(err)
}

// unserved reports an error that says the server did not run the call and
// may run it if it comes again soon, so that it is safe to send again: a
// transient reply (driver.IsTransient), or a refused connection to a
// Cluster node failing over (the client finds the new master once it
// knows).
func (n *Node) unserved(err error) bool {
	return driver.IsTransient(err) || errors.Is(err, syscall.ECONNREFUSED) && n.failingOver(err)
}

// changing reports an error that says the node is there but cannot serve
// the call yet: it answered so, lately or to the end (errWasChanging), it
// is a Cluster node failing over (both ErrUnavailable), or its replicas
// did not take a grant yet (ErrReplicasBehind).
func (n *Node) changing(err error) bool {
	return n.unserved(err) || errors.Is(err, errWasChanging) || n.failingOver(err) || errors.Is(err, ErrReplicasBehind)
}
