package quorum

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// recountReplicas is how long a count of a node's replicas is used: a
// replica that joined since, or that the node asked had not heard of yet,
// is waited for from the next count on.
const recountReplicas = time.Second

// acksWanted is how many replicas must acknowledge a grant on n.
func (n *Node) acksWanted(ctx context.Context) (int, error) {
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
	if err != nil && !n.Driver.IsServerError(err) && !errors.Is(err, driver.ErrUnexpectedReply) {
		return 0, fmt.Errorf("counting the master's replicas: %w", err)
	}
	if err != nil { // a server that refuses to tell, or cannot, is taken to have none, for good
		n.log.Warn("redlock: the server did not tell its replicas; grants do not wait for any", "driver", n.Driver.Name(), "error", err)
		n.acksCounted.Store(math.MaxInt64)
		n.acksProbed.Store(0)
		return 0, nil
	}
	v := min(r, 1)
	n.mu.Lock()
	if !n.Cluster && master != "" && master == n.acksMaster {
		// One server counts only the replicas connected now: one whose
		// link broke may still be promoted, unless its master changed.
		v = max(v, n.acksFloor)
	}
	n.acksMaster, n.acksFloor = master, v
	n.mu.Unlock()
	n.acksCounted.Store(time.Now().UnixNano())
	n.acksProbed.Store(int32(v))
	n.log.Debug("redlock: replicas counted", "driver", n.Driver.Name(), "replicas", r, "acks", v)
	return v, nil
}

// replicate returns once what n's masters of the acked keys took so far is on the
// replicas acksWanted says, within ctx, or fails with ErrReplicasBehind.
// One server serves every name, so one wait does.
func (n *Node) replicate(ctx context.Context, tm Timing, acked []string) error {
	want, err := n.acksWanted(ctx)
	if err != nil || want == 0 {
		return err
	}
	if !n.Cluster {
		acked = acked[:1]
	}
	timeout := tm.NodeTimeout
	if deadline, ok := ctx.Deadline(); ok {
		timeout = time.Until(deadline)
	}
	// An acknowledgement ends WAIT at once; its timeout, though, ends it
	// up to a tick of the server's event loop late (100ms at the default
	// hz 10), after the call's deadline, which then counts as replicas
	// that fell short: the replicas get all the time the call has.
	timeout -= 5 * time.Millisecond
	for _, key := range acked {
		acked, err := n.replicated.WaitReplicas(ctx, key, want, timeout)
		if err != nil && errors.Is(Ended(ctx), context.DeadlineExceeded) {
			n.acksProbed.Store(-1)
			return fmt.Errorf("%w: no answer to WAIT within the node timeout (%w)", ErrReplicasBehind, err)
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
			return fmt.Errorf("%w: %d of %d", ErrReplicasBehind, acked, want)
		}
	}
	return nil
}

// waitsForNone reports a node known to wait for no replica, lately.
func (n *Node) waitsForNone() bool {
	return n.replicated == nil || n.replicaAcks == 0 ||
		n.replicaAcks < 0 && n.acksProbed.Load() == 0 && n.countedLately()
}

// countedLately reports a count of n's replicas younger than recountReplicas.
func (n *Node) countedLately() bool {
	return time.Since(time.Unix(0, n.acksCounted.Load())) < recountReplicas
}

// NotOnReplicas asks the nodes in on, at once, to make their grants for
// the acked keys durable on their replicas (replicate), and returns each node's
// error; nil when no node waits for a replica.
func NotOnReplicas(ctx context.Context, g *Group, tm Timing, acked []string, on func(int) bool) []error {
	if !slices.ContainsFunc(g.Nodes, func(n *Node) bool { return on(n.Index) && !n.waitsForNone() }) {
		return nil
	}
	errs := make([]error, len(g.Nodes))
	for i, r := range Fanout(ctx, g, tm, func(ctx context.Context, i int, n *Node) (bool, error) {
		if !on(i) {
			return false, nil
		}
		return true, n.replicate(ctx, tm, acked)
	}) {
		errs[i] = r.Err
	}
	return errs
}

// Extended is an extension's answer on n, counted once the replicas took
// the longer TTL.
func (n *Node) Extended(ctx context.Context, tm Timing, acked []string, ok bool, err error) (bool, error) {
	if ok && err == nil {
		err = n.replicate(ctx, tm, acked)
	}
	return ok && err == nil, err
}
