package core

import (
	"context"
	"time"
)

// ownExpireEcho is how long after an Extend of the lease an expire event
// on its keys is taken for that Extend's own: an early expiry someone
// else sets meanwhile is heard when the key expires.
const ownExpireEcho = time.Second

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
	heard := func(event string) {
		if event == "expire" && (len(l.extending) > 0 || time.Since(time.Unix(0, l.extended.Load())) < ownExpireEcho) {
			return
		}
		select {
		case recheck <- struct{}{}:
		default:
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
