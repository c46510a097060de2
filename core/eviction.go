package core

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/quorum"

	"github.com/redlockgo/redlock/driver"
)

// evicting returns an ErrEviction for each server that may evict the
// library's keys: one with a maxmemory limit and a maxmemory-policy other
// than noeviction (every lock key has a TTL, so the volatile-* policies may
// evict it too). An evicted lock key lets another client take a held lock.
// Only a driver that reaches each server (driver.Notifier) can tell, where
// the server allows CONFIG GET; the others report nothing.
func (c *Client) evicting(ctx context.Context) []error {
	replies := quorum.Fanout(ctx, c.q, c.opts.timing(), func(ctx context.Context, i int, n *quorum.Node) ([]error, error) {
		nt, ok := n.Driver.(driver.Notifier)
		if !ok {
			return nil, nil
		}
		var mu sync.Mutex
		var found []error
		err := nt.EachServer(ctx, func(ctx context.Context, s driver.Server) error {
			policy, err := s.ConfigGet(ctx, "maxmemory-policy")
			if err != nil || policy == "" || policy == "noeviction" {
				return err
			}
			limit, err := s.ConfigGet(ctx, "maxmemory")
			if err != nil || limit == "" || limit == "0" {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			found = append(found, fmt.Errorf("%w: node %d (%s, %s) has maxmemory-policy %s with maxmemory %s: set maxmemory-policy noeviction, or a maxmemory the data never reaches",
				ErrEviction, i, n.Driver.Name(), s.Addr(), policy, limit))
			return nil
		})
		if err != nil {
			c.opts.logger.Debug("redlock: cannot read a server's eviction policy", "node", i, "driver", n.Driver.Name(), "error", err)
		}
		return found, nil
	})
	var errs []error
	for _, r := range replies {
		errs = append(errs, r.V...)
	}
	return errs
}

// warnEviction logs, once per Client and in the background, the servers
// that may evict the library's keys (see evicting): at the Client's first
// lease that holds, as New sends nothing. Not sooner: the servers answer
// by then, and a cluster client that reaches no server is not kept busy
// with it while the first calls fail.
func (c *Client) warnEviction() {
	c.evictionOnce.Do(func() {
		c.q.InBackground(func() {
			ctx, cancel := context.WithTimeout(context.Background(), max(c.opts.perNodeTimeout(), time.Second))
			defer cancel()
			for _, err := range c.evicting(ctx) {
				c.opts.logger.Warn("redlock: " + err.Error())
			}
		})
	})
}
