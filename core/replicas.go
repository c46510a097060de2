package core

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// WithReplicaAcks sets how many replicas of a master must have taken a
// grant before it counts: the lock key and the fencing counter of an
// acquisition, a hand-off, an extension. A failover promotes a replica;
// without it, a write the replica missed is lost, and the lock, with the
// same fencing token, could go to a second holder while the first still
// holds it. The write is made to wait (WAIT) within the node timeout; a
// node whose replicas fell short counts as failed, so a lease needs
// validity left once its grants are on the replicas.
//
// By default a node waits for one replica when its masters have replicas
// (on a Redis Cluster, every master has one the cluster does not mark as
// failed; for one server, a replica is connected, or was since the server
// became master), counted at the first grant, then every second, and after
// replicas fell short; a node without replicas, one
// whose server refuses to tell (INFO, CLUSTER SLOTS: logged), or whose
// driver cannot wait (driver.Replicated), waits for none.
// WithReplicaAcks(0) turns the wait off; n > 1 waits for n replicas of
// every master, and then the loss of a replica stops every grant. It
// applies to New only.
//
// WAIT is not consensus: a failover may still promote a replica that did
// not take the write (one that was cut off while another acknowledged,
// or a manual failover that forces it).
func WithReplicaAcks(n int) Option {
	return set(optReplicaAcks, func(o *options) { o.replicaAcks = n })
}

// errReplicasBehind is a node's error when its master's replicas did not
// take a grant within the node timeout.
var errReplicasBehind = errors.New("the master's replicas did not acknowledge the write within the node timeout (see WithReplicaAcks): check the replicas and their links")

// recountReplicas is how long a count of a node's replicas is used: a
// replica that joined since, or that the node asked had not heard of yet,
// is waited for from the next count on.
const recountReplicas = time.Second

// acksWanted is how many replicas must acknowledge a grant on n.
func (n *node) acksWanted(ctx context.Context) (int, error) {
	if n.replicated == nil || n.replicaAcks == 0 {
		return 0, nil
	}
	if n.replicaAcks > 0 {
		return n.replicaAcks, nil
	}
	if v := n.acksProbed.Load(); v >= 0 && n.countedLately() {
		return int(v), nil
	}
	r, master, err := n.replicated.Replicas(ctx)
	if err != nil && !n.d.IsServerError(err) && !errors.Is(err, driver.ErrUnexpectedReply) {
		return 0, fmt.Errorf("counting the master's replicas: %w", err)
	}
	if err != nil { // a server that refuses to tell, or cannot, is taken to have none, for good
		n.log.Warn("redlock: the server did not tell its replicas; grants do not wait for any", "driver", n.d.Name(), "error", err)
		n.acksCounted.Store(math.MaxInt64)
		n.acksProbed.Store(0)
		return 0, nil
	}
	v := min(r, 1)
	n.mu.Lock()
	if !n.cluster && master != "" && master == n.acksMaster {
		// One server counts only the replicas connected now: one whose
		// link broke may still be promoted, unless its master changed.
		v = max(v, n.acksFloor)
	}
	n.acksMaster, n.acksFloor = master, v
	n.mu.Unlock()
	n.acksCounted.Store(time.Now().UnixNano())
	n.acksProbed.Store(int32(v))
	n.log.Debug("redlock: replicas counted", "driver", n.d.Name(), "replicas", r, "acks", v)
	return v, nil
}

// replicate returns once what n's masters of names took so far is on the
// replicas acksWanted says, within ctx, or fails with errReplicasBehind.
// One server serves every name, so one wait does.
func (n *node) replicate(ctx context.Context, o *options, names []string) error {
	want, err := n.acksWanted(ctx)
	if err != nil || want == 0 {
		return err
	}
	if !n.cluster {
		names = names[:1]
	}
	timeout := o.perNodeTimeout()
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	// An acknowledgement ends WAIT at once; its timeout, though, ends it
	// up to a tick of the server's event loop late (100ms at the default
	// hz 10), after the call's deadline, which then counts as replicas
	// that fell short: the replicas get all the time the call has.
	timeout -= 5 * time.Millisecond
	for _, name := range names {
		acked, err := n.replicated.WaitReplicas(ctx, key(*o, name, ":acked"), want, timeout)
		if err != nil && errors.Is(ended(ctx), context.DeadlineExceeded) {
			n.acksProbed.Store(-1)
			return fmt.Errorf("%w: no answer to WAIT within the node timeout (%w)", errReplicasBehind, err)
		}
		if err != nil {
			return err
		}
		if acked >= want {
			continue
		}
		// A replica may have failed, or been promoted (and its old master
		// is gone): count them again, and wait only for those left.
		n.acksProbed.Store(-1)
		if now, err := n.acksWanted(ctx); err != nil || acked < now {
			return fmt.Errorf("%w: %d of %d", errReplicasBehind, acked, want)
		}
	}
	return nil
}

// waitsForNone reports a node known to wait for no replica, lately.
func (n *node) waitsForNone() bool {
	return n.replicated == nil || n.replicaAcks == 0 ||
		n.replicaAcks < 0 && n.acksProbed.Load() == 0 && n.countedLately()
}

// countedLately reports a count of n's replicas younger than recountReplicas.
func (n *node) countedLately() bool {
	return time.Since(time.Unix(0, n.acksCounted.Load())) < recountReplicas
}

// notOnReplicas asks the nodes in on, at once, to make their grants for
// names durable on their replicas (replicate), and returns each node's
// error; nil when no node waits for a replica.
func notOnReplicas(ctx context.Context, c *Client, o *options, names []string, on func(int) bool) []error {
	if !slices.ContainsFunc(c.nodes, func(n *node) bool { return on(n.index) && !n.waitsForNone() }) {
		return nil
	}
	errs := make([]error, len(c.nodes))
	for i, r := range fanout(ctx, c, o, func(ctx context.Context, i int, n *node) (bool, error) {
		if !on(i) {
			return false, nil
		}
		return true, n.replicate(ctx, o, names)
	}) {
		errs[i] = r.err
	}
	return errs
}

// extended is an extension's answer on n, counted once the replicas took
// the longer TTL.
func (n *node) extended(ctx context.Context, o *options, names []string, ok bool, err error) (bool, error) {
	if ok && err == nil {
		err = n.replicate(ctx, o, names)
	}
	return ok && err == nil, err
}
