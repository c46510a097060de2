package line

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// On a Redis Cluster a classic PUBLISH goes to every node, and each
// Client hears its channel on every node. So a release tells a waiter
// first on a channel sharded with the lock (lib/tell.lua): the ticket
// key's part before TicketInfix, ShardInfix and the Client's id, in the
// lock's slot, which the Client subscribes (SSUBSCRIBE) on the master of
// that slot while it has a ticket of that name. That subscription only
// saves traffic: a release that finds nobody subscribed to the sharded
// channel on its server tells the Client's own channel, which every
// Client subscribes on every node before it queues (subscribeTickets).
// So the sharded channel is subscribed in the background, and a slot that
// moves loses nothing while the Listener subscribes it again where the
// slot went.

// maxShards is how many sharded channels a Client subscribes at most
// (names waited on at once); the tickets of further names are told on its
// own channel. The goredis driver holds a connection for each.
const maxShards = 128

// shardSub is one sharded channel of the Client.
type shardSub struct {
	tickets int        // the Client's tickets told on it; under Notifier.mu
	mu      sync.Mutex // one change of the subscriptions at a time
	on      []bool     // by node: subscribed there
}

// shardChannel is the sharded channel of a ticket key of this Client (see
// lib/tell.lua), or "".
func (n *Notifier) shardChannel(ticketKey string) string {
	at := strings.LastIndex(ticketKey, TicketInfix+n.id+":")
	if at < 0 {
		return ""
	}
	return ticketKey[:at] + ShardInfix + n.id
}

// shardJoin counts a ticket on its sharded channel, subscribing it when
// it is the first; shardLeave undoes that. Only cluster nodes have them.
func (n *Notifier) shardJoin(ticketKey string)  { n.shardCount(ticketKey, +1) }
func (n *Notifier) shardLeave(ticketKey string) { n.shardCount(ticketKey, -1) }

func (n *Notifier) shardCount(ticketKey string, delta int) {
	if !n.sharded {
		return
	}
	ch := n.shardChannel(ticketKey)
	n.mu.Lock()
	s := n.shards[ch]
	if s == nil {
		if delta < 0 || len(n.shards) >= maxShards || ch == "" {
			n.mu.Unlock()
			return
		}
		s = &shardSub{on: make([]bool, len(n.subs))}
		n.shards[ch] = s
	}
	s.tickets += delta
	change := s.tickets == 0 || (delta > 0 && s.tickets == 1)
	n.mu.Unlock()
	if change {
		n.g.InBackground(func() { n.syncShard(ch, s) })
	}
}

// syncShard subscribes or unsubscribes ch on the cluster nodes, as its
// tickets say now. A node that fails is left: the Client's own channel
// tells its tickets there.
func (n *Notifier) syncShard(ch string, s *shardSub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n.mu.Lock()
	want := s.tickets > 0
	n.mu.Unlock()
	for i, sub := range n.subs {
		if !n.g.Nodes[i].Cluster || want && s.on[i] {
			continue // an unsubscription is sent anyway: the Listener may hold a subscription that failed, to place it later
		}
		ctx, cancel := context.WithTimeout(context.Background(), max(n.nodeTimeout, time.Second))
		l, _, err := sub.listener(ctx, n)
		if sl, ok := l.(driver.ShardListener); ok && err == nil {
			if want {
				err = sl.SSubscribe(ctx, ch)
			} else {
				err = sl.SUnsubscribe(ctx, ch)
			}
			s.on[i] = want == (err == nil)
		}
		cancel()
		if err != nil {
			n.log.Debug("redlock: sharded channel: the Client's own channel tells its waiters instead", "node", i, "channel", ch, "error", err)
		}
	}
	if !want {
		n.mu.Lock()
		if s.tickets == 0 && n.shards[ch] == s {
			delete(n.shards, ch)
		}
		n.mu.Unlock()
	}
}

// ownShard reports whether channel is one of this Client's sharded
// channels, and the prefix its tickets' keys have.
func (n *Notifier) ownShard(channel string) (string, bool) {
	stem, ok := strings.CutSuffix(channel, ShardInfix+n.id)
	return stem + TicketInfix + n.id + ":", ok
}
