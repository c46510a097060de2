package goredis

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/redlockgo/redlock/driver"
)

var (
	_ driver.Notifier              = (*Driver)(nil)
	_ driver.ResubscribingListener = (*listener)(nil)
)

// DB returns the database the client selects (Options().DB); a Redis
// Cluster has only database 0.
func (d *Driver) DB(context.Context) (int, error) {
	switch c := d.client.(type) {
	case *redis.Client:
		return c.Options().DB, nil
	case *redis.Ring:
		return c.Options().DB, nil
	}
	return 0, nil
}

// EachServer calls f with the client's server, or with every master and
// replica of a cluster and every shard of a ring, at once.
func (d *Driver) EachServer(ctx context.Context, f func(context.Context, driver.Server) error) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	each := func(ctx context.Context, c *redis.Client) error {
		if err := f(ctx, server{c}); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
		return nil // go on with the others: ForEachShard stops at an error
	}
	var err error
	switch c := d.client.(type) {
	case *redis.ClusterClient:
		err = c.ForEachShard(ctx, each)
	case *redis.Ring:
		err = c.ForEachShard(ctx, each)
	case *redis.Client:
		err = each(ctx, c)
	default:
		err = f(ctx, server{d.client})
	}
	return errors.Join(append(errs, err)...)
}

// server is one server of the client, as EachServer gives it.
type server struct{ c redis.UniversalClient }

func (s server) Addr() string {
	if c, ok := s.c.(*redis.Client); ok {
		return c.Options().Addr
	}
	return "?"
}

func (s server) ConfigGet(ctx context.Context, param string) (string, error) {
	m, err := s.c.ConfigGet(ctx, param).Result()
	return m[param], err
}

func (s server) ConfigSet(ctx context.Context, param, value string) error {
	return s.c.ConfigSet(ctx, param, value).Err()
}

// Listen opens a redis.PubSub. go-redis pings it when idle, reconnects it
// when it drops and resubscribes its channels by itself.
func (d *Driver) Listen(ctx context.Context, deliver func(channel, payload string)) (driver.Listener, error) {
	if cc, ok := d.client.(*redis.ClusterClient); ok {
		return d.listenCluster(ctx, cc, deliver)
	}
	return listen(ctx, d.client, deliver, ""), nil
}

// listen opens a PubSub on client; shard is the one sharded channel it
// holds, or "".
func listen(ctx context.Context, client redis.UniversalClient, deliver func(channel, payload string), shard string) *listener {
	l := &listener{
		client:  client,
		ps:      client.Subscribe(context.WithoutCancel(ctx)),
		deliver: deliver,
		shard:   shard,
		synced:  map[string]chan struct{}{},
		shards:  map[string]*listener{},
		done:    make(chan struct{}),
	}
	go l.run(l.ps.ChannelWithSubscriptions())
	return l
}

type listener struct {
	client  redis.UniversalClient
	ps      *redis.PubSub
	deliver func(channel, payload string)
	shard   string        // the sharded channel of a shard's listener
	done    chan struct{} // closed when run returns, after the PubSub closed

	mu        sync.Mutex
	synced    map[string]chan struct{} // by sync channel: closed when confirmed
	confirmed bool                     // the server confirmed shard
	dropped   func()                   // called when the server drops shard
	count     int                      // the connection's classic subscriptions, as the last confirmation counted them
	failed    bool                     // a Subscribe failed since: its channels come on a later connection
	back      func()                   // called when a new connection subscribed them again (OnResubscribed)

	// The sharded channels, each on a PubSub of its own: go-redis
	// resubscribes a PubSub's sharded channels in one SSUBSCRIBE after a
	// reconnect, which the server refuses (CROSSSLOT) for two slots.
	smu     sync.Mutex
	shards  map[string]*listener
	lost    func(channel string)
	closing sync.WaitGroup // the shards' PubSubs the servers dropped, closing
}

func (l *listener) run(msgs <-chan any) {
	defer close(l.done)
	for m := range msgs {
		switch m := m.(type) {
		case *redis.Message:
			l.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			l.mu.Lock()
			if confirmed := l.synced[m.Channel]; confirmed != nil && m.Kind == "subscribe" {
				close(confirmed)
				delete(l.synced, m.Channel)
			}
			// go-redis reconnects silently and subscribes every channel
			// again in one SUBSCRIBE: the first confirmation on the new
			// connection counts one, where the old one had some, or where
			// a Subscribe failed (the connection was down, maybe before
			// any was confirmed) and go-redis kept its channels for it.
			var back func()
			switch m.Kind {
			case "subscribe":
				if m.Count == 1 && (l.count > 0 || l.failed) {
					back, l.failed = l.back, false
				}
				l.count = m.Count
			case "unsubscribe":
				l.count = m.Count
			}
			var dropped func()
			if m.Channel == l.shard && l.shard != "" {
				switch m.Kind {
				case "ssubscribe":
					l.confirmed = true
				case "sunsubscribe": // the slot moved: we never send SUNSUBSCRIBE
					dropped, l.dropped = l.dropped, nil
				}
			}
			l.mu.Unlock()
			if dropped != nil {
				dropped()
			}
			if back != nil {
				back()
			}
		}
	}
}

// Subscribe sends the channels in one SUBSCRIBE with a fresh sync channel
// last, and waits for the server to confirm that one. go-redis only writes
// the command, and confirmations of a channel are ambiguous (an earlier
// SUBSCRIBE or a resubscription after a reconnect also sends one); a
// channel nobody else uses is confirmed only when this command, or a
// resubscription that includes all its channels, was processed.
func (l *listener) Subscribe(ctx context.Context, channels ...string) error {
	if len(channels) == 0 {
		return nil
	}
	err := l.confirm(ctx, channels[0], func(tok string) error {
		return l.ps.Subscribe(ctx, append(channels[:len(channels):len(channels)], tok)...)
	})
	if err != nil {
		l.mu.Lock()
		l.failed = true
		l.mu.Unlock()
	}
	return err
}

// confirm runs send with a fresh sync channel and waits until the server
// confirmed that channel's subscription. The sync channel is named after
// a channel of send's, so that a user allowed that one (and those under
// its prefix) may subscribe it.
func (l *listener) confirm(ctx context.Context, after string, send func(tok string) error) error {
	tok := after + ":sync:" + rand.Text()
	confirmed := make(chan struct{})
	l.mu.Lock()
	l.synced[tok] = confirmed
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.synced, tok)
		l.mu.Unlock()
		_ = l.ps.Unsubscribe(context.WithoutCancel(ctx), tok)
	}()
	if err := send(tok); err != nil {
		return err
	}
	select {
	case <-confirmed:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-l.done:
		return redis.ErrClosed
	}
}

// Unsubscribe sends UNSUBSCRIBE; it does not wait for the confirmation.
func (l *listener) Unsubscribe(ctx context.Context, channels ...string) error {
	return l.ps.Unsubscribe(ctx, channels...)
}

// Close closes the PubSub and waits until its goroutines are done with it.
func (l *listener) Close() error {
	l.smu.Lock()
	shards := l.shards
	l.shards = nil
	l.smu.Unlock()
	for _, sl := range shards {
		sl.Close()
	}
	err := l.ps.Close()
	<-l.done
	l.closing.Wait()
	return err
}

// SSubscribe subscribes channel on a PubSub of its own, and returns once
// the server confirmed it: go-redis only writes SSUBSCRIBE, and hides a
// refusal (MOVED), so a sync channel subscribed after it tells when the
// server has answered it.
func (l *listener) SSubscribe(ctx context.Context, channel string) error {
	sl := listen(ctx, l.client, l.deliver, channel)
	sl.mu.Lock()
	sl.dropped = func() {
		// The PubSub is closed in the background: run, which calls
		// this, must return first. Close waits for it.
		l.smu.Lock()
		f := l.lost
		if l.shards[channel] == sl {
			delete(l.shards, channel)
		}
		l.closing.Add(1)
		l.smu.Unlock()
		go func() {
			defer l.closing.Done()
			sl.Close()
		}()
		if f != nil {
			f(channel)
		}
	}
	sl.mu.Unlock()
	err := sl.confirm(ctx, channel, func(tok string) error {
		if err := sl.ps.SSubscribe(ctx, channel); err != nil {
			return err
		}
		return sl.ps.Subscribe(ctx, tok)
	})
	sl.mu.Lock()
	switch {
	case err != nil:
	case !sl.confirmed:
		err = errors.New("goredis: the server did not take the sharded channel (another node serves its slot)")
	case sl.dropped == nil: // confirmed, then dropped: its slot moved meanwhile
		err = errors.New("goredis: the server dropped the sharded channel as it subscribed it")
	}
	sl.mu.Unlock()
	l.smu.Lock()
	unused := sl
	if err == nil && l.shards != nil {
		unused = l.shards[channel]
		l.shards[channel] = sl
	}
	l.smu.Unlock()
	if unused != nil {
		unused.Close()
	}
	return err
}

// SUnsubscribe closes the channel's PubSub.
func (l *listener) SUnsubscribe(_ context.Context, channel string) error {
	l.smu.Lock()
	sl := l.shards[channel]
	delete(l.shards, channel)
	l.smu.Unlock()
	if sl != nil {
		return sl.Close()
	}
	return nil
}

func (l *listener) OnResubscribed(f func()) {
	l.mu.Lock()
	l.back = f
	l.mu.Unlock()
}

func (l *listener) OnShardLost(lost func(channel string)) {
	l.smu.Lock()
	l.lost = lost
	l.smu.Unlock()
}
