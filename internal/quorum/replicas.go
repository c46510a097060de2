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

// acksWanted is how many replicas must acknowledge a grant on n's master
// of key: one when that master has any (see WithReplicaAcks).
func (n *Node) acksWanted(ctx context.Context, key string) (int, error) {
	if n.replicated == nil || n.replicaAcks == 0 {
		return 0, nil
	}
	if n.replicaAcks > 0 {
		return n.replicaAcks, nil
	}
	if n.acksProbed.Load() < 0 || !n.countedLately() {
		if err := n.countReplicas(ctx); err != nil {
			return 0, err
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return min(n.acksCount.Of(key), 1), nil
}

// countReplicas counts the replicas of n's masters into acksCount, and
// the most that a grant waits for into acksProbed.
func (n *Node) countReplicas(ctx context.Context) error {
	r, err := n.replicated.Replicas(ctx)
	// No answer, or one that says "not now" (BUSY, LOADING), is asked
	// again at the next grant: only a refusal means "no replicas".
	if driver.IsTransient(err) {
		return fmt.Errorf("%w: the master could not count its replicas yet (%w)", ErrReplicasBehind, err)
	}
	if err != nil && !n.Driver.IsServerError(err) && !errors.Is(err, driver.ErrUnexpectedReply) {
		return fmt.Errorf("counting the master's replicas: %w", err)
	}
	if err != nil { // a server that refuses to tell, or cannot, is taken to have none, for good
		n.log.Warn("redlock: the server did not tell its replicas; grants do not wait for any", "driver", n.Driver.Name(), "error", err)
		n.mu.Lock()
		n.acksCount = driver.Replicas{}
		n.mu.Unlock()
		n.acksCounted.Store(math.MaxInt64)
		n.acksProbed.Store(0)
		return nil
	}
	n.mu.Lock()
	if r.Slots == nil && r.Master != "" && r.Master == n.acksMaster {
		// One server counts only the replicas connected now: one whose
		// link broke may still be promoted, unless its master changed.
		r.Connected = max(r.Connected, n.acksFloor)
	}
	n.acksMaster, n.acksFloor = r.Master, min(r.Connected, 1)
	n.acksCount = r
	n.mu.Unlock()
	most := min(r.Connected, 1)
	for _, s := range r.Slots {
		most = max(most, min(s.Replicas, 1))
	}
	n.acksCounted.Store(time.Now().UnixNano())
	n.acksProbed.Store(int32(most))
	n.log.Debug("redlock: replicas counted", "driver", n.Driver.Name(), "replicas", r.Connected, "slot ranges", len(r.Slots), "acks", most)
	return nil
}

// replicate returns once what n's masters of the acked keys took so far is on the
// replicas acksWanted says, within ctx, or fails with ErrReplicasBehind.
// One server serves every name, so one wait does.
func (n *Node) replicate(ctx context.Context, tm Timing, acked []string) error {
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
		want, err := n.acksWanted(ctx, key)
		if err != nil {
			return err
		}
		if want == 0 {
			continue
		}
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
		// A replica may have been promoted (and its old master is gone),
		// or have left: count them again, and wait only for those left.
		n.acksProbed.Store(-1)
		if now, err := n.acksWanted(ctx, key); err != nil || acked < now {
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
