package line

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

// Notifier is the Notify strategy. Each node has one subscription
// connection, opened on the first wait and shared by all waiters; a key is
// subscribed on every node while at least one waiter waits on it. A
// keyspace event that frees a key wakes one of its waiters (see
// keyWaiters), and every waiter also retries at the holder's TTL, so a lost
// event costs at most that.
type Notifier struct {
	g           *quorum.Group
	id          string // the Client's, in its channel and ticket keys
	log         *slog.Logger
	setFlags    bool          // give the servers the flags Notify needs (see configure)
	nodeTimeout time.Duration // the Client's, for its own calls
	ready       sync.Map      // key prefixes under which every node delivers this Client's Ticket events
	subs        []*subscriber // by node

	sharded    bool   // a node is a Redis Cluster: tickets have sharded channels (shards.go)
	standalone []bool // by node: one server, not a Cluster (see Grants.Expect)

	mu        sync.Mutex
	keys      map[string]*keyWaiters
	tickets   map[string]*Ticket // the queued Mutex waiters, by Ticket key
	shards    map[string]*shardSub
	closed    bool
	following bool           // see follow.go
	rewoke    time.Time      // the last wake-up after a resubscription
	rewake    *time.Timer    // the next one, when it is due
	followers sync.WaitGroup // the goroutine following the Cluster, which Close waits for
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
	tickets map[string]bool // key prefixes whose channel of the Client's is subscribed (see tickets.go)

	configured sync.Map // addresses of the servers given the flags Notify needs (see config.go)
	refused    error    // ErrConfigRefused or ErrNotifyUnsupported, which do not go away
}

// Config is what a Client tells its wait strategy of itself.
type Config struct {
	ID          string // the Client's, in its channel and ticket keys
	Log         *slog.Logger
	SetFlags    bool          // give the servers the flags Notify needs (WithNotifyConfig)
	NodeTimeout time.Duration // the Client's node timeout, for its own calls
	Poll        bool          // the Client waits by Poll
}

// New returns the wait strategy cfg asks for over g's nodes. It sends
// nothing; under Notify it checks that every node's driver can deliver
// keyspace notifications: the servers are configured to publish them at
// the first wait (see subscriber.listener), or by Ping.
func New(g *quorum.Group, cfg Config) (Waiter, error) {
	if cfg.Poll {
		return Poller{g.Closing()}, nil
	}
	n := &Notifier{g: g, id: cfg.ID, log: cfg.Log, setFlags: cfg.SetFlags, nodeTimeout: cfg.NodeTimeout,
		keys: map[string]*keyWaiters{}, tickets: map[string]*Ticket{}, shards: map[string]*shardSub{}}
	for i, nd := range g.Nodes {
		nt, ok := nd.Driver.(driver.Notifier)
		if !ok || nd.Driver.Protocol() != 3 {
			return nil, fmt.Errorf("%w: node %d uses driver %s, which speaks RESP%d; the Notify wait strategy needs RESP3 keyspace notifications; use WithWaitStrategy(Poll) with this driver",
				ErrNotifyUnsupported, i, nd.Driver.Name(), nd.Driver.Protocol())
		}
		n.subs = append(n.subs, &subscriber{nt: nt, node: i})
		n.sharded = n.sharded || nd.Cluster
		n.standalone = append(n.standalone, !nd.Cluster)
	}
	return n, nil
}

// watch subscribes nothing yet: most acquisitions succeed at their first
// attempt and should cost one round trip, not three. The first wait joins
// the key's waiters instead, then has the caller attempt again at once, so
// a release between the failed attempt and the subscription is not missed.
func (n *Notifier) watch(ctx context.Context, o *Options, key string) (watch, error) {
	if o.Poll { // WithWaitStrategy(Poll) given to this primitive only
		return pollWatch{o.Backoff, n.g.Closing()}, nil
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
func (n *Notifier) join(ctx context.Context, w *notifyWatch) error {
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
			kw = &keyWaiters{ready: make(chan struct{}), woken: w.o.Woken}
			n.keys[w.key] = kw
			n.follow()
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

// subscribe subscribes key's channels on every node. A node that fails is
// logged and left out: the others' events and the TTL retry still wake
// the waiters, and the attempt reports a node that is down.
func (n *Notifier) subscribe(ctx context.Context, o *Options, key string) {
	n.each(ctx, o, "subscribe", func(ctx context.Context, s *subscriber) error {
		l, prefix, err := s.listener(ctx, n)
		if err != nil {
			return err
		}
		return l.Subscribe(ctx, keyChannels(prefix, key, o)...)
	})
}

// keyChannels are the channels that tell of key: its keyspace channel
// and, for a key that the library's writes free with a message
// (Options.Woken), the key's own.
func keyChannels(keyspace, key string, o *Options) []string {
	if o.Woken {
		return []string{keyspace + key, key}
	}
	return []string{keyspace + key}
}

func (n *Notifier) unsubscribe(ctx context.Context, o *Options, key string) {
	n.each(ctx, o, "unsubscribe", func(ctx context.Context, s *subscriber) error {
		s.mu.Lock()
		l, prefix := s.l, s.prefix
		s.mu.Unlock()
		if l == nil {
			return nil
		}
		return l.Unsubscribe(ctx, keyChannels(prefix, key, o)...)
	})
}

// each runs op on every node's subscriber at once, detached from the
// waiter's cancellation (other waiters share the result) and bounded by
// the node timeout, but at least a second: a subscription that times out
// costs a waiter up to a TTL. It returns once a majority succeeded: a
// stalled node's op finishes in the background, and the waiter, which
// needs the events of a majority, does not wait for it.
func (n *Notifier) each(ctx context.Context, o *Options, what string, op func(context.Context, *subscriber) error) {
	tm := quorum.Timing{NodeTimeout: max(o.NodeTimeout, time.Second)}
	warn := func(i int, r quorum.Reply[struct{}]) {
		if r.Err != nil && !n.g.Closed() {
			n.log.Warn("redlock: keyspace notifications: "+what+" failed; waiters fall back to retrying at the holder's TTL",
				"node", i, "driver", n.g.Nodes[i].Driver.Name(), "error", r.Err)
		}
	}
	replies := quorum.Vote(context.WithoutCancel(ctx), n.g, tm, func(ctx context.Context, i int, _ *quorum.Node) (struct{}, error) {
		return struct{}{}, op(ctx, n.subs[i])
	}, quorum.Ballot[struct{}]{Yes: func(struct{}) bool { return true }, Late: warn})
	for i, r := range replies {
		if !quorum.StillOut(r) {
			warn(i, r)
		}
	}
}

// listener opens the node's Listener on first use. Each use first gives
// the flags Notify needs to the node's servers that lack them (see
// config.go): all of them at the Client's first wait on the node,
// then those that joined a Cluster since (a new master, a replica), which
// publish nothing until they have them; configured ones cost nothing.
func (s *subscriber) listener(ctx context.Context, n *Notifier) (driver.Listener, string, error) {
	if err := n.configure(ctx, s); err != nil && !refused(err) {
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
	if rl, ok := l.(driver.ResubscribingListener); ok {
		rl.OnResubscribed(n.resubscribed)
	}
	s.l, s.prefix = l, prefix
	return l, prefix, nil
}

// deliverer wakes a waiter of the key a keyspace event freed, and tells
// the key's holders that listen of it (see Hear). Other events on the key
// (set, expire: our own acquisitions and extensions) are not releases and
// wake no one; an expire is told to the holders. A message on the Client's own channel is a
// release's hand-off to one of its tickets (see tickets.go); one on the
// channel named as a key whose waiters subscribed it (Options.Woken)
// wakes one of them as a del would.
func (n *Notifier) deliverer(node int, prefix string) func(channel, event string) {
	return func(channel, event string) {
		tickets, own := n.ownShard(channel)
		if !own {
			tickets, own = n.ownChannel(channel)
		}
		if own {
			fence, rest, _ := strings.Cut(event, " ")
			// A channel speaks for the tickets under its prefix only: a
			// sharded one for its own name's.
			if mac, Ticket, ok := strings.Cut(rest, " "); ok && strings.HasPrefix(Ticket, tickets) {
				n.handedOn(node, Ticket, fence, mac)
			}
			return
		}
		key, keyspace := strings.CutPrefix(channel, prefix)
		if keyspace && !vanished[event] {
			return
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		switch kw := n.keys[key]; {
		case kw == nil:
		case !keyspace:
			if kw.woken {
				kw.wakeOne()
			}
		default:
			kw.tell(event)
			if event != "expire" {
				kw.wakeOne()
			}
		}
	}
}

// resubscribed wakes every waiter of the Client once a node's Listener
// subscribed its channels again on a new connection: a release there
// while it was gone told nobody (or passed the Client's tickets over as
// deaf, see lib/hand_on.lua), and the waiters would otherwise wait for
// their safety net, the holder's TTL. Each attempts once; a wake-up is
// not a grant. The holders that listen check their lease, whose events
// may have been lost too. At most one wake-up per rewakeEvery: a user
// who may publish on the Client's channel can have the servers close the
// connection as often as it likes (by overflowing its output buffer),
// and would have the waiters attempt as often.
func (n *Notifier) resubscribed() {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch wait := rewakeEvery - time.Since(n.rewoke); {
	case n.closed: // no timer may outlive Close
	case n.rewake != nil: // one is due
	case wait <= 0:
		n.rewakeLocked()
	default:
		n.rewake = time.AfterFunc(wait, func() {
			n.mu.Lock()
			defer n.mu.Unlock()
			n.rewake = nil
			if !n.closed {
				n.rewakeLocked()
			}
		})
	}
}

// rewakeEvery bounds how often resubscriptions wake the waiters.
const rewakeEvery = 100 * time.Millisecond

// rewakeLocked wakes every waiter and holder that listens (see
// resubscribed). n.mu is held.
func (n *Notifier) rewakeLocked() {
	n.rewoke = time.Now()
	for _, kw := range n.keys {
		kw.wakeAll()
		kw.tell("resubscribed")
	}
	for _, t := range n.tickets {
		t.signal()
	}
}

// close closes the Listeners. Waiters return ErrClosed from wait (the
// Client's closing channel is closed before).
func (n *Notifier) Close() error {
	n.mu.Lock()
	n.closed = true
	if n.rewake != nil {
		n.rewake.Stop()
	}
	n.mu.Unlock()
	n.followers.Wait()
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
