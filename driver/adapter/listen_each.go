package adapter

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// ListenFunc opens a Listener on one node, as Notifier.Listen does.
type ListenFunc func(ctx context.Context, deliver func(channel, payload string)) (driver.Listener, error)

// ListenEach returns a Listener over every node of a Redis Cluster, for the
// adapters' Notifier.Listen. A cluster node publishes the keyspace events
// of the keys it holds and only those, to its own subscribers: SUBSCRIBE on
// one node hears nothing of the others' keys. So each subscription goes to
// every node, and a key's events arrive whichever node holds it, also after
// its slot moved to another known node.
//
// nodes returns the cluster's nodes by address, each with the ListenFunc
// of a single-node client. It is asked again at every Subscribe; a node
// that appeared gets a Listener with everything subscribed so far, and the
// Listener of one that left the cluster is closed. deliver is called from
// one goroutine at a time.
//
// The Listener is a ShardListener when owner, which returns the address of
// the master that serves a channel's slot now, is not nil, and the nodes'
// Listeners are ShardNodeListeners: a sharded channel is subscribed on
// that master alone, and subscribed again where its slot went when the
// master drops it. It is a ResubscribingListener, telling when a node's
// Listener that is one subscribed again on a new connection.
func ListenEach(ctx context.Context, nodes func(context.Context) (map[string]ListenFunc, error), owner func(ctx context.Context, channel string) (string, error), deliver func(channel, payload string)) (driver.Listener, error) {
	l := &eachListener{nodes: nodes, owner: owner, ls: map[string]driver.Listener{}, channels: map[string]bool{},
		shards: map[string]string{}, closing: make(chan struct{})}
	l.deliver = func(channel, payload string) {
		l.dmu.Lock()
		defer l.dmu.Unlock()
		deliver(channel, payload)
	}
	// A node that fails here is tried again at the next Subscribe, which
	// reports it; only a cluster with no node to listen on fails Listen.
	if ls, err := l.grow(ctx); len(ls) == 0 {
		l.Close()
		return nil, errors.Join(err, errors.New("redlock: no cluster node to listen on"))
	}
	return l, nil
}

type eachListener struct {
	nodes   func(context.Context) (map[string]ListenFunc, error)
	owner   func(ctx context.Context, channel string) (string, error)
	deliver func(channel, payload string)
	dmu     sync.Mutex // one deliver at a time, across the nodes' Listeners

	mu       sync.Mutex
	ls       map[string]driver.Listener // by node address
	channels map[string]bool            // what a new node's driver.Listener subscribes
	shards   map[string]string          // the sharded channels, by the address holding each ("" while it is placed)
	back     func()                     // given to every node's Listener (OnResubscribed)
	closed   bool

	smu     sync.Mutex     // one placement of a sharded channel at a time
	closing chan struct{}  // closed by Close: the placements in the background end
	placing sync.WaitGroup // the placements in the background
}

var errListenerClosed = errors.New("redlock: listener closed")

// grow opens a Listener on each node that has none yet, subscribing what
// the others have, closes those of the nodes that left, and returns every
// node's Listener.
func (l *eachListener) grow(ctx context.Context) (map[string]driver.Listener, error) {
	// Closed once l.mu is released: a closing Listener may report lost
	// sharded channels, which takes l.mu.
	var gone []driver.Listener
	defer func() {
		for _, nl := range gone {
			nl.Close()
		}
	}()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil, errListenerClosed
	}
	nodes, err := l.nodes(ctx)
	if err != nil {
		return nil, err
	}
	var errs []error
	if len(nodes) > 0 { // none known: the client lost track, not the cluster its nodes
		for addr, nl := range l.ls {
			if nodes[addr] == nil {
				gone = append(gone, nl) // its goroutines end at once: the node is gone
				delete(l.ls, addr)
				for ch, at := range l.shards {
					if at == addr {
						l.shards[ch] = ""
						l.placeLater(ch)
					}
				}
			}
		}
	}
	for addr, listen := range nodes {
		if l.ls[addr] != nil {
			continue
		}
		nl, err := listen(ctx, l.deliver)
		if sl, ok := nl.(driver.ShardNodeListener); ok && err == nil {
			sl.OnShardLost(func(channel string) { l.lost(addr, channel) })
		}
		if rl, ok := nl.(driver.ResubscribingListener); ok && err == nil && l.back != nil {
			rl.OnResubscribed(l.back)
		}
		if err == nil && len(l.channels) > 0 {
			err = nl.Subscribe(ctx, slices.Collect(maps.Keys(l.channels))...)
		}
		if err != nil {
			if nl != nil {
				gone = append(gone, nl)
			}
			errs = append(errs, fmt.Errorf("node %s: %w", addr, err))
			continue
		}
		l.ls[addr] = nl
	}
	return maps.Clone(l.ls), errors.Join(errs...)
}

// OnResubscribed has every node's Listener that can tell it call f once
// it subscribed its channels again on a new connection.
func (l *eachListener) OnResubscribed(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.back = f
	for _, nl := range l.ls {
		if rl, ok := nl.(driver.ResubscribingListener); ok {
			rl.OnResubscribed(f)
		}
	}
}

// Refresh lists the nodes again, listening to those that joined and
// closing those that left (see grow).
func (l *eachListener) Refresh(ctx context.Context) error {
	_, err := l.grow(ctx)
	return err
}

// each runs op on every node's Listener at once.
func each(ls map[string]driver.Listener, op func(driver.Listener) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for addr, nl := range ls {
		wg.Go(func() {
			if err := op(nl); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("node %s: %w", addr, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Subscribe subscribes on every node and returns once all confirmed. The
// channels are recorded first, so a node that appears meanwhile gets them.
func (l *eachListener) Subscribe(ctx context.Context, channels ...string) error {
	return l.add(ctx, l.channels, channels, func(nl driver.Listener) error { return nl.Subscribe(ctx, channels...) })
}

func (l *eachListener) add(ctx context.Context, set map[string]bool, names []string, op func(driver.Listener) error) error {
	l.mu.Lock()
	for _, n := range names {
		set[n] = true
	}
	l.mu.Unlock()
	ls, err := l.grow(ctx)
	return errors.Join(err, each(ls, op))
}

func (l *eachListener) Unsubscribe(ctx context.Context, channels ...string) error {
	l.mu.Lock()
	for _, c := range channels {
		delete(l.channels, c)
	}
	ls := maps.Clone(l.ls)
	l.mu.Unlock()
	return each(ls, func(nl driver.Listener) error { return nl.Unsubscribe(ctx, channels...) })
}

// Close closes every node's Listener; deliver is not called after it.
func (l *eachListener) Close() error {
	l.mu.Lock()
	ls := l.ls
	l.ls, l.closed = nil, true
	if l.shards != nil {
		close(l.closing)
		l.shards = nil
	}
	l.mu.Unlock()
	l.placing.Wait()
	return each(ls, func(nl driver.Listener) error { return nl.Close() })
}

var errNoShards = errors.New("redlock: this cluster client cannot route sharded channels")

// SSubscribe subscribes a sharded channel on the master that serves its
// slot, and keeps it subscribed: where a master drops it (the slot moved,
// the connection broke, the master left), it is placed again.
func (l *eachListener) SSubscribe(ctx context.Context, channel string) error {
	if l.owner == nil {
		return errNoShards
	}
	l.smu.Lock()
	defer l.smu.Unlock()
	l.mu.Lock()
	if _, ok := l.shards[channel]; !ok && !l.closed {
		l.shards[channel] = ""
	}
	l.mu.Unlock()
	err := l.placeLocked(ctx, channel)
	if err != nil {
		l.mu.Lock()
		if at, ok := l.shards[channel]; ok && at == "" {
			l.placeLater(channel)
		}
		l.mu.Unlock()
	}
	return err
}

// placeLocked subscribes channel on the master of its slot, unless it is
// not wanted or held already. l.smu is held.
func (l *eachListener) placeLocked(ctx context.Context, channel string) error {
	l.mu.Lock()
	at, wanted := l.shards[channel]
	l.mu.Unlock()
	if !wanted || at != "" {
		return nil
	}
	addr, err := l.owner(ctx, channel)
	if err != nil {
		return err
	}
	ls, err := l.grow(ctx)
	nl, ok := ls[addr].(driver.ShardNodeListener)
	if !ok {
		return errors.Join(err, fmt.Errorf("redlock: no listener for sharded channels on %s", addr))
	}
	if err := nl.SSubscribe(ctx, channel); err != nil {
		return fmt.Errorf("node %s: %w", addr, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, wanted := l.shards[channel]; wanted {
		l.shards[channel] = addr
	}
	return nil
}

// SUnsubscribe drops a sharded channel.
func (l *eachListener) SUnsubscribe(ctx context.Context, channel string) error {
	l.smu.Lock()
	defer l.smu.Unlock()
	l.mu.Lock()
	at := l.shards[channel]
	delete(l.shards, channel)
	nl, _ := l.ls[at].(driver.ShardNodeListener)
	l.mu.Unlock()
	if nl == nil {
		return nil
	}
	return nl.SUnsubscribe(ctx, channel)
}

// lost places again a sharded channel that the master at addr dropped.
func (l *eachListener) lost(addr, channel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if at, ok := l.shards[channel]; ok && at == addr {
		l.shards[channel] = ""
		l.placeLater(channel)
	}
}

// placeLater places channel in the background, trying until it is placed
// or no longer wanted: the slot's new master is known once the cluster
// agrees on it. Until then the messages of the channel go to the classic
// channels (see lib/tell.lua). l.mu is held.
func (l *eachListener) placeLater(channel string) {
	l.placing.Add(1)
	go func() {
		defer l.placing.Done()
		for delay := 50 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
			t := time.NewTimer(delay)
			select {
			case <-l.closing:
				t.Stop()
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			l.smu.Lock()
			err := l.placeLocked(ctx, channel)
			l.smu.Unlock()
			cancel()
			if err == nil { // placed, or no longer wanted
				return
			}
		}
	}()
}
