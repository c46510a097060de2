package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testSemaphoreState reads Semaphore.State through a known life of a
// semaphore of 3: no permit in use; two leases holding 2 and 1 permits,
// each by the token its permit ID names, with its TTL, all three permits told apart; the
// size SetPermits stored; one lease left after the other's Unlock.
func testSemaphoreState(t *testing.T, e env) {
	ctx, n := ctxFor(t, 10*time.Second), name(t)
	const ttl = 10 * time.Second
	sem := e.client(t).Semaphore(n, 3, core.WithTTL(ttl))
	state := func(what string) core.SemaphoreState {
		t.Helper()
		s, err := sem.State(ctx)
		if err != nil {
			t.Fatalf("State %s: %v", what, err)
		}
		if len(s.PerNode) != len(e.addrs) {
			t.Fatalf("State %s: %d nodes' views, want %d", what, len(s.PerNode), len(e.addrs))
		}
		return s
	}
	if s := state("of a new semaphore"); s.Size != 3 || s.InUse != 0 || len(s.Leases) != 0 || s.Waiting != 0 {
		t.Fatalf("State of a new semaphore of 3: %+v, want 3 permits, none in use", s)
	}
	// holder is the part of a permit ID that the servers hold.
	holder := func(l *core.Lease) string { return strings.Split(l.ID(), "-")[1] }
	two := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return sem.Acquire(ctx, 2) })
	one := mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) { return sem.Acquire(ctx, 1) })
	s := state("with every permit in use")
	if s.InUse != 3 || len(s.Leases) != 2 || s.Token != one.Token() {
		t.Fatalf("State with every permit in use: %+v, want 3 in use by 2 leases, token %d", s, one.Token())
	}
	var permits []int
	for _, l := range s.Leases {
		want := map[string]int{holder(two): 2, holder(one): 1}[l.Holder]
		if len(l.Permits) != want || l.TTL <= ttl-2*time.Second || l.TTL > ttl {
			t.Fatalf("State with every permit in use: lease %+v, want %q with 2 permits or %q with 1, for about %v", l, holder(two), holder(one), ttl)
		}
		permits = append(permits, l.Permits...)
	}
	if slices.Sort(permits); !slices.Equal(permits, []int{1, 2, 3}) {
		t.Fatalf("State with every permit in use: permits %v, want 1, 2 and 3", permits)
	}
	if err := sem.SetPermits(ctx, 5); err != nil {
		t.Fatal(err)
	}
	if err := two.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	if s := state("after SetPermits(5) and an Unlock"); s.Size != 5 || s.InUse != 1 || len(s.Leases) != 1 || s.Leases[0].Holder != holder(one) {
		t.Fatalf("State after SetPermits(5) and an Unlock: %+v, want 5 permits, 1 in use by %q", s, holder(one))
	}
	if err := one.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
}
