package core

import (
	"context"
	"sync/atomic"
	"time"
)

// ownExpireEcho is how long after an Extend of the lease an expire event
// on its keys may be that Extend's own: such an event is checked once the
// time is over, not at once, so that an Extend costs no check, but another
// client's write of the key meanwhile (a force-release handing it on sets
// its expiry too) is still heard soon.
const ownExpireEcho = 250 * time.Millisecond

// hear has the lease, under Notify, listen to the keyspace events of the
// keys it holds alone, and check itself on the servers (Valid) after one
// that may have removed it, so that Done closes soon after the lease is
// lost. It runs at the first call of Done: it subscribes the keys on every
// node's subscription connection of the Client (which a Client opens
// once), so a lease whose Done nobody reads costs nothing. Events that
// come while a check runs make one more check; those after the lease
// ended (its Unlock's) none.
func (l *Lease) hear() {
	h, ok := l.hold.(interface{ lockKeys() []string })
	n, notify := l.c.queues(&l.opts)
	if !ok || !notify || l.Err() != nil {
		return
	}
	keys := h.lockKeys()
	if len(keys) == 0 {
		return
	}
	o := l.opts.waiting()
	recheck := make(chan struct{}, 1)
	check := func() {
		select {
		case recheck <- struct{}{}:
		default:
		}
	}
	// echoFor is how much longer an expire event may be an Extend's own.
	echoFor := func() time.Duration {
		if len(l.extending) > 0 {
			return ownExpireEcho // the event may have come before its reply
		}
		return ownExpireEcho - time.Since(time.Unix(0, l.extended.Load()))
	}
	var deferred atomic.Bool // a check waits for the end of an Extend's echo
	var checkLater func()
	checkLater = func() {
		if wait := echoFor(); wait > 0 {
			time.AfterFunc(wait+ownExpireEcho/10, checkLater)
			return
		}
		deferred.Store(false)
		check()
	}
	heard := func(event string) {
		switch {
		case event != "expire":
			check()
		case echoFor() <= 0:
			check()
		case deferred.CompareAndSwap(false, true):
			checkLater()
		}
	}
	l.c.q.InBackground(func() {
		n.Hear(l.done, &o, keys, heard)
		for {
			select {
			case <-l.done:
				return
			case <-l.c.q.Closing():
				return
			case <-recheck:
			}
			// Bounded by the node timeout; a check without a majority's
			// answer leaves the lease as it was.
			_, _ = l.Valid(context.Background())
		}
	})
}

// The keys that hold a lease alone: a reader's and a permit's are shared,
// and others' extensions of them would make checks.

func (h mutexHold) lockKeys() []string { return []string{h.keys.lock} }

func (h fairHold) lockKeys() []string { return []string{h.keys.lock} }

func (h multiHold) lockKeys() []string {
	keys := make([]string, len(h))
	for i, mh := range h {
		keys[i] = mh.keys.lock
	}
	return keys
}

func (h rwHold) lockKeys() []string {
	if h.read {
		return nil
	}
	return []string{h.keys.writer}
}
