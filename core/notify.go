package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// notifier is the Notify strategy. Each node has one subscription
// connection, opened on the first wait and shared by all waiters; a key is
// subscribed on every node while at least one waiter waits on it. A
// keyspace event that frees a key wakes one of its waiters (see
// keyWaiters), and every waiter also retries at the holder's TTL, so a lost
// event costs at most that.
type notifier struct {
	c     *Client
	ready sync.Map      // key prefixes under which every node delivers this Client's ticket events
	subs  []*subscriber // by node

	sharded bool // a node is a Redis Cluster: tickets have sharded channels (notify_shard.go)

	mu      sync.Mutex
	keys    map[string]*keyWaiters
	tickets map[string]*ticket // the queued Mutex waiters, by ticket key
	shards  map[string]*shardSub
	closed  bool
}

// subscriber is one node's Listener and the prefix of its keyspace
// channels, __keyspace@<db>__:.
type subscriber struct {
	nt   driver.Notifier
	node int

	mu      sync.Mutex
	l       driver.Listener // nil until the first wait
	prefix  string
	closed  bool
	tickets map[string]bool // key prefixes whose channel of the Client's is subscribed (see notify_queue.go)

	configured sync.Map // addresses of the servers given the flags Notify needs (see notify_config.go)
	refused    error    // ErrConfigRefused or ErrNotifyUnsupported, which do not go away
}

// newNotifier checks that every node's driver can deliver keyspace
// notifications. It sends nothing: the servers are configured to publish
// them at the first wait (see subscriber.listener), or by Ping.
func newNotifier(c *Client) (waiter, error) {
	n := &notifier{c: c, keys: map[string]*keyWaiters{}, tickets: map[string]*ticket{}, shards: map[string]*shardSub{}}
	for i, nd := range c.nodes {
		nt, ok := nd.d.(driver.Notifier)
		if !ok || nd.d.Protocol() != 3 {
			return nil, fmt.Errorf("%w: node %d uses driver %s, which speaks RESP%d; the Notify wait strategy needs RESP3 keyspace notifications; use WithWaitStrategy(Poll) with this driver",
				ErrNotifyUnsupported, i, nd.d.Name(), nd.d.Protocol())
		}
		n.subs = append(n.subs, &subscriber{nt: nt, node: i})
		n.sharded = n.sharded || nd.cluster
	}
	return n, nil
}

// watch subscribes nothing yet: most acquisitions succeed at their first
// attempt and should cost one round trip, not three. The first wait joins
// the key's waiters instead, then has the caller attempt again at once, so
// a release between the failed attempt and the subscription is not missed.
func (n *notifier) watch(ctx context.Context, o *options, key string) (watch, error) {
	if o.wait == Poll { // WithWaitStrategy(Poll) given to this primitive only
		return pollWatch{o.backoff, n.c.closing}, nil
	}
	n.mu.Lock()
	t := n.tickets[key]
	n.mu.Unlock()
	if t != nil {
		return &ticketWatch{n: n, t: t, o: o}, nil
	}
	return &notifyWatch{n: n, key: key, o: o, ctx: ctx, wake: make(chan struct{}, 1)}, nil
}

// join adds w to its key's waiters and returns once the key is subscribed.
func (n *notifier) join(ctx context.Context, w *notifyWatch) error {
	for {
		n.mu.Lock()
		if n.closed {
			n.mu.Unlock()
			return ErrClosed
		}
		kw := n.keys[w.key]
		if kw != nil && kw.leaving != nil {
			// The last waiter is unsubscribing: subscribe again after it,
			// or the UNSUBSCRIBE could overtake the SUBSCRIBE.
			n.mu.Unlock()
			select {
			case <-kw.leaving:
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		first := kw == nil
		if first {
			kw = &keyWaiters{ready: make(chan struct{})}
			n.keys[w.key] = kw
		}
		kw.waiters = append(kw.waiters, w)
		w.kw = kw
		n.mu.Unlock()
		if first {
			// Those who join meanwhile wait on ready, so the subscription
			// is made for all of them and does not stop with ctx.
			n.subscribe(ctx, w.o, w.key)
			close(kw.ready)
		}
		select {
		case <-kw.ready:
			return nil
		case <-ctx.Done():
			w.stop()
			return ctx.Err()
		}
	}
}

// subscribe subscribes key's channel on every node. A node that fails is
// logged and left out: the others' events and the TTL retry still wake
// the waiters, and the attempt reports a node that is down.
func (n *notifier) subscribe(ctx context.Context, o *options, key string) {
	n.each(ctx, o, "subscribe", func(ctx context.Context, s *subscriber) error {
		l, prefix, err := s.listener(ctx, n)
		if err != nil {
			return err
		}
		return l.Subscribe(ctx, prefix+key)
	})
}

func (n *notifier) unsubscribe(ctx context.Context, o *options, key string) {
	n.each(ctx, o, "unsubscribe", func(ctx context.Context, s *subscriber) error {
		s.mu.Lock()
		l, prefix := s.l, s.prefix
		s.mu.Unlock()
		if l == nil {
			return nil
		}
		return l.Unsubscribe(ctx, prefix+key)
	})
}

// each runs op on every node's subscriber at once, detached from the
// waiter's cancellation (other waiters share the result) and bounded by
// the node timeout, but at least a second: a subscription that times out
// costs a waiter up to a TTL. It returns once a majority succeeded: a
// stalled node's op finishes in the background, and the waiter, which
// needs the events of a majority, does not wait for it.
func (n *notifier) each(ctx context.Context, o *options, what string, op func(context.Context, *subscriber) error) {
	so := *o
	so.nodeTimeout = max(o.perNodeTimeout(), time.Second)
	warn := func(i int, r reply[struct{}]) {
		if r.err != nil && !n.c.closed.Load() {
			n.c.opts.logger.Warn("redlock: keyspace notifications: "+what+" failed; waiters fall back to retrying at the holder's TTL",
				"node", i, "driver", n.c.nodes[i].d.Name(), "error", r.err)
		}
	}
	replies := vote(context.WithoutCancel(ctx), n.c, &so, func(ctx context.Context, i int, _ *node) (struct{}, error) {
		return struct{}{}, op(ctx, n.subs[i])
	}, ballot[struct{}]{yes: func(struct{}) bool { return true }, late: warn})
	for i, r := range replies {
		if !errors.Is(r.err, errNoAnswerYet) {
			warn(i, r)
		}
	}
}

// listener opens the node's Listener on first use. Each use first gives
// the flags Notify needs to the node's servers that lack them (see
// notify_config.go): all of them at the Client's first wait on the node,
// then those that joined a Cluster since (a new master, a replica), which
// publish nothing until they have them; configured ones cost nothing.
func (s *subscriber) listener(ctx context.Context, n *notifier) (driver.Listener, string, error) {
	if err := n.configure(ctx, s); err != nil {
		return nil, "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, "", ErrClosed
	case s.l != nil:
		return s.l, s.prefix, nil
	}
	db, err := s.nt.DB(ctx)
	if err != nil {
		return nil, "", err
	}
	prefix := fmt.Sprintf("__keyspace@%d__:", db)
	l, err := s.nt.Listen(ctx, n.deliverer(s.node, prefix))
	if err != nil {
		return nil, "", err
	}
	s.l, s.prefix = l, prefix
	return l, prefix, nil
}

// deliverer wakes a waiter of the key a keyspace event freed. Other events
// on the key (set, expire: our own acquisitions and extensions) are not
// releases and wake no one. A message on the Client's own channel is a
// release's hand-off to one of its tickets (see notify_queue.go).
func (n *notifier) deliverer(node int, prefix string) func(channel, event string) {
	return func(channel, event string) {
		tickets, own := n.ownShard(channel)
		if !own {
			tickets, own = n.ownChannel(channel)
		}
		if own {
			fence, rest, _ := strings.Cut(event, " ")
			// A channel speaks for the tickets under its prefix only: a
			// sharded one for its own name's.
			if mac, ticket, ok := strings.Cut(rest, " "); ok && strings.HasPrefix(ticket, tickets) {
				n.handedOn(node, ticket, fence, mac)
			}
			return
		}
		key, ok := strings.CutPrefix(channel, prefix)
		if !ok || (event != "del" && event != "expired" && event != "evicted") {
			return
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		if kw := n.keys[key]; kw != nil {
			kw.wakeOne(node)
		}
	}
}

// close closes the Listeners. Waiters return ErrClosed from wait (the
// Client's closing channel is closed before).
func (n *notifier) close() error {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	var errs []error
	for _, s := range n.subs {
		s.mu.Lock()
		l := s.l
		s.l, s.closed = nil, true
		s.mu.Unlock()
		if l != nil { // not under a lock: Close waits for deliver, which takes n.mu
			errs = append(errs, l.Close())
		}
	}
	return errors.Join(errs...)
}
