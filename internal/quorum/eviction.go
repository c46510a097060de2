package quorum

import (
	"context"
	"fmt"
	"sync"

	"github.com/redlockgo/redlock/driver"
)

// Evicting returns an ErrEviction for each server that may evict the
// library's keys: one with a maxmemory limit and a maxmemory-policy other
// than noeviction (every lock key has a TTL, so the volatile-* policies may
// evict it too). An evicted lock key lets another client take a held lock.
// Only a driver that reaches each server (driver.Notifier) can tell, where
// the server allows CONFIG GET; the others report nothing.
func Evicting(ctx context.Context, g *Group, tm Timing) []error {
	replies := Fanout(ctx, g, tm, func(ctx context.Context, i int, n *Node) ([]error, error) {
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
			n.log.Debug("redlock: cannot read a server's eviction policy", "node", i, "driver", n.Driver.Name(), "error", err)
		}
		return found, nil
	})
	var errs []error
	for _, r := range replies {
		errs = append(errs, r.V...)
	}
	return errs
}
