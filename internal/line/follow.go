package line

import (
	"context"
	"sync"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// followEvery is how often, while the Client has waiters on a Redis
// Cluster, it looks for the servers that joined it since (a replica
// added, a replica promoted, a master added for a reshard): they publish
// no keyspace event until given the flags, and a waiter hears none from
// a master it does not listen to. A look costs what the driver needs to
// list the servers (go-redis and rueidis: CLUSTER SLOTS from one node),
// and CONFIG GET and SET on each server it has not configured yet;
// nothing on the others, however many.
const followEvery = time.Second

// follow starts following the Cluster, unless it does already, until the
// Client has no waiter left. n.mu is held.
func (n *Notifier) follow() {
	if n.following || n.closed || !n.sharded {
		return
	}
	n.following = true
	n.followers.Add(1)
	go n.followWhileWaited()
}

func (n *Notifier) followWhileWaited() {
	defer n.followers.Done()
	t := time.NewTicker(followEvery)
	defer t.Stop()
	for {
		select {
		case <-n.g.Closing():
			return
		case <-t.C:
		}
		n.mu.Lock()
		idle := n.closed || len(n.keys) == 0 && len(n.tickets) == 0
		n.following = !idle
		n.mu.Unlock()
		if idle {
			return
		}
		n.followOnce()
	}
}

// followOnce configures each Cluster node's servers that lack the flags
// (see configure) and has its Listener, once it has one, listen to the
// masters that joined.
func (n *Notifier) followOnce() {
	ctx, cancel := context.WithTimeout(context.Background(), max(n.nodeTimeout, time.Second))
	defer cancel()
	go func() { // Close waits for this round: end it at once
		select {
		case <-n.g.Closing():
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for i, s := range n.subs {
		if !n.g.Nodes[i].Cluster {
			continue
		}
		wg.Go(func() {
			err := n.configure(ctx, s)
			s.mu.Lock()
			l, _ := s.l.(driver.RefreshListener)
			s.mu.Unlock()
			if l != nil {
				if rerr := l.Refresh(ctx); rerr != nil && err == nil {
					err = rerr
				}
			}
			if err != nil && !refused(err) && !n.g.Closed() {
				n.log.Debug("redlock: keyspace notifications: could not follow the servers that join the Cluster; tried again in a second",
					"node", i, "driver", n.g.Nodes[i].Driver.Name(), "error", err)
			}
		})
	}
	wg.Wait()
}
