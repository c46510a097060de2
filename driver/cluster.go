package driver

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// ListenFunc opens a Listener on one node, as Notifier.Listen does.
type ListenFunc func(ctx context.Context, deliver func(channel, payload string)) (Listener, error)

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
func ListenEach(ctx context.Context, nodes func(context.Context) (map[string]ListenFunc, error), deliver func(channel, payload string)) (Listener, error) {
	l := &eachListener{nodes: nodes, ls: map[string]Listener{}, channels: map[string]bool{}}
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
	deliver func(channel, payload string)
	dmu     sync.Mutex // one deliver at a time, across the nodes' Listeners

	mu       sync.Mutex
	ls       map[string]Listener // by node address
	channels map[string]bool     // what a new node's Listener subscribes
	closed   bool
}

var errListenerClosed = errors.New("redlock: listener closed")

// grow opens a Listener on each node that has none yet, subscribing what
// the others have, closes those of the nodes that left, and returns every
// node's Listener.
func (l *eachListener) grow(ctx context.Context) (map[string]Listener, error) {
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
				nl.Close() // its goroutines end at once: the node is gone
				delete(l.ls, addr)
			}
		}
	}
	for addr, listen := range nodes {
		if l.ls[addr] != nil {
			continue
		}
		nl, err := listen(ctx, l.deliver)
		if err == nil && len(l.channels) > 0 {
			err = nl.Subscribe(ctx, slices.Collect(maps.Keys(l.channels))...)
		}
		if err != nil {
			if nl != nil {
				nl.Close()
			}
			errs = append(errs, fmt.Errorf("node %s: %w", addr, err))
			continue
		}
		l.ls[addr] = nl
	}
	return maps.Clone(l.ls), errors.Join(errs...)
}

// each runs op on every node's Listener at once.
func each(ls map[string]Listener, op func(Listener) error) error {
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
	return l.add(ctx, l.channels, channels, func(nl Listener) error { return nl.Subscribe(ctx, channels...) })
}

func (l *eachListener) add(ctx context.Context, set map[string]bool, names []string, op func(Listener) error) error {
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
	return each(ls, func(nl Listener) error { return nl.Unsubscribe(ctx, channels...) })
}

// Close closes every node's Listener; deliver is not called after it.
func (l *eachListener) Close() error {
	l.mu.Lock()
	ls := l.ls
	l.ls, l.closed = nil, true
	l.mu.Unlock()
	return each(ls, func(nl Listener) error { return nl.Close() })
}
