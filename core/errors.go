package core

import (
	"errors"
	"fmt"

	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/line"
	"github.com/redlockgo/redlock/internal/quorum"
)

var (
	// ErrInvalid is returned, wrapped with what was wrong and what to do,
	// for input that cannot be used: no nodes, a nil driver, an empty name
	// or one holding '}', a key prefix holding a brace, a TTL that is not
	// positive or not above the drift allowance, an option value that
	// cannot work or an option that does not apply to the primitive, a nil
	// context. Nothing is written to any server when it is returned.
	ErrInvalid = driver.ErrInvalid

	// ErrNotAcquired is returned by the Try calls (TryLock, TryRLock,
	// TryAcquire) when another owner holds the lock or too few permits are
	// free, and by the waiting calls when WithMaxAttempts attempts all
	// failed so. A cancelled or expired context is reported as the
	// context's error instead, so the two can be told apart.
	ErrNotAcquired = quorum.ErrNotAcquired

	// ErrNotHeld is returned by Unlock and Extend on a lease that no longer
	// holds its lock: it was released already, it expired, or another owner
	// holds the name now. The other owner's key is left intact.
	ErrNotHeld = errors.New("redlock: not held: the lease was released or expired")

	// ErrLost is returned by Extend and Unlock, and by Lease.Err after Done
	// closes, when the lease lost its lock before it was released: its key
	// was deleted or expired on a majority of nodes, or its validity ran out
	// before an extension reached a majority. errors.Is(err, ErrNotHeld)
	// holds for it too. Where ForceUnlock freed the lease (a Mutex's
	// plain lease, a FairMutex's, an RWMutex writer's), the error returned
	// says so, and errors.Is(err, ErrLost) holds for it.
	ErrLost = fmt.Errorf("%w: the lease was lost before release (its key expired or was deleted); stop using what it protected", ErrNotHeld)

	// ErrNoQuorum is returned, joined with each node's error, when too many
	// nodes failed to answer for a majority to be possible: they are down,
	// unreachable, or too slow for the node timeout (a node that answered
	// with an error reply answered: see ErrServerError), or, for a call
	// on a Semaphore lease by its permit ID (Release, ReleaseAll, Extend),
	// too few answered to tell whether a majority held it. The Try calls and
	// the other single calls return it at once; the waiting calls (Lock,
	// RLock, Acquire, Wait) wait it out, and when their context ends first
	// return the context's error joined with it. On a Redis Cluster, a
	// connection refused or broken within 30s of the cluster's last answer
	// is a failover (ErrUnavailable), not a node down. ErrUnavailable and
	// ErrReplicasBehind are other sentinels: errors.Is(err, ErrNoQuorum)
	// does not hold for them, so that "down" can be told from "passing".
	ErrNoQuorum = quorum.ErrNoQuorum

	// ErrServerError is returned, joined with each node's error reply,
	// when nodes answered but too few of them without an error for a
	// majority: a script or command was refused (WRONGTYPE: a key holds
	// data of another kind, as when another program uses the same name;
	// NOPERM: an ACL forbids it; OOM: the server is out of memory). The
	// nodes are up: retrying will not help until what the reply names is
	// fixed.
	ErrServerError = quorum.ErrServerError

	// ErrClosed is returned by every call on a Client after Close, and on
	// the primitives and leases it made.
	ErrClosed = quorum.ErrClosed

	// ErrUnavailable is returned, joined with each node's error, when the
	// nodes that cost a call its majority answered that they cannot serve
	// it yet (each is asked again within the node timeout): a Redis Cluster
	// slot that migrates, a failover, a server loading its data or busy. It
	// passes by itself: a Try call may be retried, and the waiting calls
	// (Lock, RLock, Acquire, Wait) wait it out, returning the context's
	// error joined with it when their context ends first.
	ErrUnavailable = quorum.ErrUnavailable

	// ErrReplicasBehind is returned, joined with each node's error, when
	// grants did not count because their masters' replicas did not
	// acknowledge them within the node timeout (WithReplicaAcks), and too
	// few others counted for a majority: a replica is down, paused, flagged
	// failed, or its link is broken. Check the replicas, or lower
	// WithReplicaAcks if losing a grant in a failover is acceptable. The
	// waiting calls wait it out, as they do ErrUnavailable.
	ErrReplicasBehind = quorum.ErrReplicasBehind

	// ErrNotifyUnsupported is returned by New when the Notify wait
	// strategy (the default) cannot work with a node's driver, which does
	// not speak RESP3 (use WithWaitStrategy(Poll) with it), and by Ping
	// when a server has no keyspace notifications: waits still go on, woken
	// by the library's messages, as where a server refuses CONFIG (which
	// is only logged, see WithNotifyConfig).
	ErrNotifyUnsupported = line.ErrNotifyUnsupported

	// ErrEviction is returned by Ping, joined with the other servers', for
	// a server that may evict the library's keys: it has a maxmemory limit
	// and a maxmemory-policy other than noeviction (lock keys carry a TTL,
	// so the volatile-* policies may evict them too), and an evicted lock
	// key lets another client take a held lock. The Client's first lease
	// logs it at warn level. The message says what to set; a caller sure
	// that its data never reaches maxmemory may ignore it.
	ErrEviction = quorum.ErrEviction
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
