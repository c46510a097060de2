package line

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

const (
	notifyParam = "notify-keyspace-events"
	// notifyFlags are the flags Notify needs: keyspace channels (K) for
	// generic events (g: del, which our scripts and DELEX/DELIFEQ cause)
	// and expiry (x: expired).
	notifyFlags = "Kgx"
)

// configure gives the flags Notify needs to the servers of s's node that
// lack them, unless WithNotifyConfig(false). A refusal (ErrConfigRefused,
// ErrNotifyUnsupported) does not go away: it is logged once at warn level,
// kept for Ping, and returned by every later call, which sends nothing
// more. It stops no wait: every wake the library causes travels as a
// message; the events only wake waiters where a key vanished without the
// library (a holder that died, a DEL by hand), who then retry on their
// own. A node that does not answer is tried again at the next call.
func (n *Notifier) configure(ctx context.Context, s *subscriber) error {
	if !n.setFlags {
		return nil
	}
	s.mu.Lock()
	kept := s.refused
	s.mu.Unlock()
	if kept != nil {
		return kept
	}
	err := configureNode(ctx, n, s, n.log.Debug)
	if refused(err) {
		s.mu.Lock()
		if s.refused == nil {
			s.refused = err
			n.log.Warn(err.Error()+"; waiting goes on: releases and count-downs wake their waiters by message, while a holder that dies, or a key deleted by hand, wakes them only at their own retry (the holder's TTL)",
				"node", s.node, "driver", n.g.Nodes[s.node].Driver.Name())
		}
		s.mu.Unlock()
	}
	return err
}

// refusal returns the first node's refusal to publish the events Notify
// needs (see configure), which Ping returns.
func (n *Notifier) refusal() error {
	for _, s := range n.subs {
		s.mu.Lock()
		err := s.refused
		s.mu.Unlock()
		if err != nil {
			return err
		}
	}
	return nil
}

// Ping configures every node (see configure) at once, bounded by the
// node timeout, and returns the failures of the nodes, by node, and a
// server without keyspace notifications (ErrNotifyUnsupported), which is
// no node's failure. A refused CONFIG is only logged: waits go on
// without the events, as they do where the flags were never set.
func (n *Notifier) Ping(ctx context.Context) (errs []error, unsupported error) {
	tm := quorum.Timing{NodeTimeout: max(n.nodeTimeout, time.Second)}
	replies := quorum.Fanout(ctx, n.g, tm, func(ctx context.Context, i int, _ *quorum.Node) (struct{}, error) {
		return struct{}{}, n.configure(ctx, n.subs[i])
	})
	errs = make([]error, len(replies))
	for i, r := range replies {
		if !refused(r.Err) {
			errs[i] = r.Err
		}
	}
	if err := n.refusal(); errors.Is(err, ErrNotifyUnsupported) {
		return errs, err
	}
	return errs, nil
}

// configureNode adds the flags Notify needs to those of every server
// behind a node that it did not configure yet, each keeping its own. A
// server that does not answer, while others do (a replica down), is only
// logged (by log), and tried again the next time: the node fails when
// none answered.
func configureNode(ctx context.Context, n *Notifier, sub *subscriber, log func(msg string, args ...any)) error {
	i, d := sub.node, n.g.Nodes[sub.node].Driver
	var answered atomic.Bool
	err := sub.nt.EachServer(ctx, func(ctx context.Context, s driver.Server) error {
		if _, done := sub.configured.Load(s.Addr()); done {
			answered.Store(true)
			return nil
		}
		err := configureServer(ctx, i, d, s)
		if err == nil {
			sub.configured.Store(s.Addr(), true)
		}
		if err == nil || errors.Is(err, ErrNotifyUnsupported) || errors.Is(err, ErrConfigRefused) {
			answered.Store(true)
		}
		return err
	})
	if err == nil || errors.Is(err, ErrNotifyUnsupported) || errors.Is(err, ErrConfigRefused) || !answered.Load() {
		return err
	}
	log("redlock: cannot configure keyspace notifications on a server of the node that does not answer (a replica, or a master that is down); waiters on the keys it holds, or will hold once promoted, fall back to retrying at the holder's TTL",
		"node", i, "driver", d.Name(), "error", err)
	return nil
}

// configureServer adds the flags Notify needs to one server's, keeping
// every flag it has.
func configureServer(ctx context.Context, i int, d driver.Driver, s driver.Server) error {
	flags, note := notifyFlags, "; add the flags the server has set already"
	cur, err := s.ConfigGet(ctx, notifyParam)
	if err == nil {
		var changed bool
		if flags, changed = mergeFlags(cur, notifyFlags); !changed {
			return nil
		}
		note = ""
		err = s.ConfigSet(ctx, notifyParam, flags)
	}
	switch {
	case err == nil:
		return nil
	case !d.IsServerError(err) || driver.IsTransient(err):
		// No answer, or one that goes away (BUSY, LOADING): tried again.
		return fmt.Errorf("%s: %w", s.Addr(), err)
	case strings.Contains(strings.ToLower(err.Error()), "unknown command"):
		// miniredis, and servers without CONFIG (which also lack keyspace
		// notifications, or have CONFIG disabled: see WithNotifyConfig).
		return fmt.Errorf("%w: node %d (%s, %s): the server does not support keyspace notifications (%v); use WithWaitStrategy(Poll)",
			ErrNotifyUnsupported, i, d.Name(), s.Addr(), err)
	}
	return fmt.Errorf(`%w; to have them, run CONFIG SET %s "%s" by hand, then pass WithNotifyConfig(false) (node %d, %s, %s: %v%s)`,
		ErrConfigRefused, notifyParam, flags, i, d.Name(), s.Addr(), err, note)
}

// mergeFlags returns current with the flags of need it lacks appended,
// and whether it added any. Redis reports 'A' for "g$lshzxetd", so a flag
// that 'A' implies is not added.
func mergeFlags(current, need string) (string, bool) {
	have := strings.ReplaceAll(current, "A", "g$lshzxetd")
	out := current
	for _, f := range need {
		if !strings.ContainsRune(have, f) && !strings.ContainsRune(out, f) {
			out += string(f)
		}
	}
	return out, out != current
}

// refused reports a server's refusal of the flags Notify needs, which
// does not go away.
func refused(err error) bool {
	return errors.Is(err, ErrConfigRefused) || errors.Is(err, ErrNotifyUnsupported)
}
