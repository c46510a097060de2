package rueidis

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redlockgo/redlock/driver"
)

var (
	_ driver.Notifier              = (*Driver)(nil)
	_ driver.ResubscribingListener = (*listener)(nil)
)

// DB asks the server which database the client's connections select
// (CLIENT INFO), since a rueidis.Client does not expose its
// ClientOption.SelectDB. A server without CLIENT INFO (before Redis 6.2) is
// taken to be on database 0.
func (d *Driver) DB(ctx context.Context) (int, error) {
	info, err := d.client.Do(ctx, d.client.B().ClientInfo().Build()).ToString()
	if err != nil {
		if d.IsServerError(err) {
			return 0, nil
		}
		return 0, err
	}
	for _, field := range strings.Fields(info) {
		if v, ok := strings.CutPrefix(field, "db="); ok {
			return strconv.Atoi(v)
		}
	}
	return 0, fmt.Errorf("rueidis: CLIENT INFO has no db field: %q", info)
}

// EachServer calls f with every server the client knows, one at a time:
// on a cluster, every master and replica.
func (d *Driver) EachServer(ctx context.Context, f func(context.Context, driver.Server) error) error {
	var errs []error
	for addr, c := range d.client.Nodes() {
		errs = append(errs, f(ctx, server{addr, c}))
	}
	return errors.Join(errs...)
}

// server is one server of the client, as EachServer gives it.
type server struct {
	addr string
	c    rueidis.Client
}

func (s server) Addr() string { return s.addr }

func (s server) ConfigGet(ctx context.Context, param string) (string, error) {
	m, err := s.c.Do(ctx, s.c.B().ConfigGet().Parameter(param).Build()).AsStrMap()
	return m[param], err
}

func (s server) ConfigSet(ctx context.Context, param, value string) error {
	return s.c.Do(ctx, s.c.B().ConfigSet().ParameterValue().ParameterValue(param, value).Build()).Error()
}

// Listen dedicates a connection of the client to the subscriptions. A
// dedicated connection does not reconnect by itself: when the channel
// SetPubSubHooks returns reports that it broke, the listener dedicates
// another and resubscribes what it had.
func (d *Driver) Listen(ctx context.Context, deliver func(channel, payload string)) (driver.Listener, error) {
	if d.cluster() {
		return d.listenCluster(ctx, deliver)
	}
	l := &listener{client: d.client, deliver: deliver, subs: map[string]bool{}, shards: map[string]bool{}, closing: make(chan struct{}), done: make(chan struct{})}
	l.mu.Lock()
	errs := l.dedicateLocked()
	l.mu.Unlock()
	go l.run(errs)
	return l, nil
}

type listener struct {
	client  rueidis.Client
	deliver func(channel, payload string)
	closing chan struct{} // closed by Close
	done    chan struct{} // closed when run returns

	mu     sync.Mutex
	dc     rueidis.DedicatedClient // nil while down: its replacement failed, and run tries again
	down   error                   // why dc is nil
	subs   map[string]bool         // channels a new connection resubscribes
	shards map[string]bool         // sharded channels, which a new connection reports lost
	lost   func(channel string)
	back   func() // called once a new connection subscribed subs again (OnResubscribed)

	// deliver must not run once Close returned: the hook, on the
	// connection's reader goroutine, checks closed under dmu.
	dmu    sync.RWMutex
	closed bool
}

func (l *listener) dedicateLocked() <-chan error {
	l.dc, _ = l.client.Dedicate() // dc.Close gives the connection back
	return l.dc.SetPubSubHooks(rueidis.PubSubHooks{OnMessage: func(m rueidis.PubSubMessage) {
		l.dmu.RLock()
		defer l.dmu.RUnlock()
		if !l.closed {
			l.deliver(m.Channel, m.Message)
		}
	}, OnSubscription: func(s rueidis.PubSubSubscription) {
		// The server drops the sharded channels of a slot that moved.
		// Our own SUNSUBSCRIBE dropped the channel from shards first.
		if s.Kind == "sunsubscribe" {
			l.dropped(s.Channel)
		}
	}})
}

// dropped reports a sharded channel the server no longer delivers.
func (l *listener) dropped(channel string) {
	l.dmu.RLock()
	closed := l.closed
	l.dmu.RUnlock()
	if closed {
		return
	}
	l.mu.Lock()
	lost := l.shards[channel] && l.lost != nil
	delete(l.shards, channel)
	f := l.lost
	l.mu.Unlock()
	if lost {
		f(channel)
	}
}

// run replaces the connection each time it breaks, backing off while the
// node stays down.
func (l *listener) run(errs <-chan error) {
	defer close(l.done)
	const minDelay, maxDelay = 50 * time.Millisecond, 5 * time.Second
	delay := minDelay
	for {
		select {
		case <-l.closing:
			return
		case <-errs:
		}
		t := time.NewTimer(delay)
		select {
		case <-l.closing:
			t.Stop()
			return
		case <-t.C:
		}
		var ok bool
		errs, ok = l.redial()
		if ok {
			delay = minDelay
		} else {
			delay = min(2*delay, maxDelay)
		}
	}
}

// redial dedicates a new connection and resubscribes on it. It reports
// whether that worked; when not, the new connection is closed, so errs
// reports at once and run tries again.
func (l *listener) redial() (<-chan error, bool) {
	// The old connection is closed outside l.mu: closing waits for its
	// reader, whose hooks may wait for l.mu (dropped).
	l.mu.Lock()
	old := l.dc
	errs := l.dedicateLocked()
	dc, chans, shards, back := l.dc, slices.Collect(maps.Keys(l.subs)), slices.Collect(maps.Keys(l.shards)), l.back
	l.mu.Unlock()
	if old != nil {
		old.Close()
	}
	for _, ch := range shards { // they went with the connection: ListenEach places them again
		l.dropped(ch)
	}
	cmds := rueidis.Commands{dc.B().Ping().Build()} // with nothing to resubscribe, still check the node
	if len(chans) > 0 {
		cmds = append(cmds, dc.B().Subscribe().Channel(chans...).Build())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, r := range dc.DoMulti(ctx, cmds...) {
		if err := r.Error(); err != nil {
			// Not kept: a closed connection refuses every later use as
			// "recycled", which says nothing of the node.
			l.mu.Lock()
			if l.dc == dc {
				l.dc, l.down = nil, err
			}
			l.mu.Unlock()
			dc.Close()
			return errs, false
		}
	}
	if len(chans) > 0 && back != nil {
		back()
	}
	return errs, true
}

// errDown is the error of a call on a listener whose connection is down.
var errDown = errors.New("rueidis: the subscription connection is down; its channels are subscribed again once it is back")

// do sends the command cmd builds on the current connection. One that
// was replaced meanwhile refuses it ("recycled"): the replacement took
// over the channels recorded before, and the command is sent there too.
// While the connection is down, do sends nothing and returns errDown.
func (l *listener) do(ctx context.Context, cmd func(rueidis.DedicatedClient) rueidis.Completed) error {
	for {
		l.mu.Lock()
		dc, down := l.dc, l.down
		l.mu.Unlock()
		if dc == nil {
			return fmt.Errorf("%w: %w", errDown, down)
		}
		err := dc.Do(ctx, cmd(dc)).Error()
		l.mu.Lock()
		replaced := l.dc != dc
		l.mu.Unlock()
		if !errors.Is(err, rueidis.ErrDedicatedClientRecycled) || !replaced {
			return err
		}
	}
}

// Subscribe sends SUBSCRIBE; rueidis returns once the server confirmed
// every channel. A channel is resubscribed after a reconnect even when
// this call failed.
func (l *listener) Subscribe(ctx context.Context, channels ...string) error {
	l.mu.Lock()
	for _, c := range channels {
		l.subs[c] = true
	}
	l.mu.Unlock()
	return l.do(ctx, func(dc rueidis.DedicatedClient) rueidis.Completed {
		return dc.B().Subscribe().Channel(channels...).Build()
	})
}

func (l *listener) Unsubscribe(ctx context.Context, channels ...string) error {
	l.mu.Lock()
	for _, c := range channels {
		delete(l.subs, c)
	}
	l.mu.Unlock()
	return dropped(l.do(ctx, func(dc rueidis.DedicatedClient) rueidis.Completed {
		return dc.B().Unsubscribe().Channel(channels...).Build()
	}))
}

// dropped is the error of an unsubscription: none while the connection
// is down, as the server keeps nothing of a connection that is gone.
func dropped(err error) error {
	if errors.Is(err, errDown) {
		return nil
	}
	return err
}

// SSubscribe sends SSUBSCRIBE; rueidis returns once the server confirmed
// it, or with its error (MOVED when another node serves the slot). The
// channel is recorded first, so that a drop pushed meanwhile is seen.
func (l *listener) SSubscribe(ctx context.Context, channel string) error {
	l.mu.Lock()
	l.shards[channel] = true
	dc, down := l.dc, l.down
	l.mu.Unlock()
	var err error
	if dc == nil {
		err = fmt.Errorf("%w: %w", errDown, down)
	} else {
		err = dc.Do(ctx, dc.B().Ssubscribe().Channel(channel).Build()).Error()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err != nil:
		delete(l.shards, channel)
		return err
	case l.dc != dc || !l.shards[channel]:
		return errors.New("rueidis: the server dropped the sharded channel as it subscribed it")
	}
	return nil
}

func (l *listener) SUnsubscribe(ctx context.Context, channel string) error {
	l.mu.Lock()
	delete(l.shards, channel)
	l.mu.Unlock()
	return dropped(l.do(ctx, func(dc rueidis.DedicatedClient) rueidis.Completed {
		return dc.B().Sunsubscribe().Channel(channel).Build()
	}))
}

func (l *listener) OnResubscribed(f func()) {
	l.mu.Lock()
	l.back = f
	l.mu.Unlock()
}

func (l *listener) OnShardLost(lost func(channel string)) {
	l.mu.Lock()
	l.lost = lost
	l.mu.Unlock()
}

// Close closes the connection and waits for run to return.
func (l *listener) Close() error {
	l.dmu.Lock()
	closed := l.closed
	l.closed = true
	l.dmu.Unlock()
	if closed {
		return nil
	}
	close(l.closing)
	<-l.done
	l.mu.Lock()
	dc := l.dc
	l.dc, l.down = nil, errors.New("rueidis: listener closed")
	l.mu.Unlock()
	if dc != nil {
		dc.Close() // outside l.mu, as in redial
	}
	return nil
}
