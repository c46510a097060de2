package line

import "context"

// vanished are the keyspace events after which a held key may be gone,
// or go early: deleted, expired, evicted, or given a TTL. They are heard
// with the flags Notify sets ("Kgx"), evicted only where the server also
// has 'e'.
var vanished = map[string]bool{"del": true, "expired": true, "evicted": true, "expire": true}

// Hear calls heard with the events on keys after which a lock held on
// them may be gone, and with "resubscribed" when a node's subscription
// came back after its events were lost, until done is closed or the
// Client closes. It joins
// keys' waiters, so a key is subscribed on every node once, however many
// local waiters and holders share it; it wakes none of them. It returns
// once the keys are subscribed, or the Client closed; the listening stops
// in the background. heard runs in the Listener's delivery and must not
// block.
func (n *Notifier) Hear(done <-chan struct{}, o *Options, keys []string, heard func(event string)) {
	select {
	case <-done:
		return
	default:
	}
	if n.refusal() != nil {
		return // no events to hear
	}
	ctx := context.Background()
	var ws []*notifyWatch
	for _, key := range keys {
		w := &notifyWatch{n: n, key: key, o: o, ctx: ctx, wake: make(chan struct{}, 1), heard: heard}
		if n.join(ctx, w) != nil {
			break // closed
		}
		ws = append(ws, w)
	}
	n.g.InBackground(func() {
		select {
		case <-done:
		case <-n.g.Closing():
		}
		for _, w := range ws {
			w.stop()
		}
	})
}

// tell passes event to the key's holders that listen (see Hear).
func (kw *keyWaiters) tell(event string) {
	for _, w := range kw.waiters {
		if w.heard != nil {
			w.heard(event)
		}
	}
}
