package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/core"
)

// testForceLostSaysForced forces held names free: the former holder's
// Extend, its Unlock (with no Extend before it), and its Err once its
// watchdog closed Done, are ErrLost saying that the lease was
// force-released, so that a log line tells a force-release from an
// expiry.
func testForceLostSaysForced(t *testing.T, e env, f forcible) {
	ctx, n := ctxFor(t, 20*time.Second), name(t)
	admin := e.client(t, unhurried)
	forced := func(l *core.Lease) {
		t.Helper()
		if err := f.force(ctx, admin, n, l); err != nil {
			t.Fatalf("force-release of a held name: %v", err)
		}
	}
	saysForced := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, core.ErrLost) || !strings.Contains(err.Error(), "force") {
			t.Fatalf("the forced holder's %s: %v; want ErrLost saying it was force-released", what, err)
		}
	}
	take := func(o ...core.Option) *core.Lease {
		t.Helper()
		return mustLock(t, ctx, func(ctx context.Context) (*core.Lease, error) {
			return f.try(ctx, e.client(t, unhurried), n, append([]core.Option{core.WithTTL(10 * time.Second)}, o...)...)
		})
	}

	extended := take()
	forced(extended)
	saysForced("Extend", extended.Extend(ctx, 10*time.Second))
	saysForced("Unlock after Extend", extended.Unlock(ctx))

	unlocked := take()
	forced(unlocked)
	saysForced("Unlock", unlocked.Unlock(ctx))

	watched := take(core.WithTTL(2*time.Second), core.WithAutoExtend()) // extended every third of its TTL
	forced(watched)
	select {
	case <-watched.Done():
	case <-ctx.Done():
		t.Fatal("the forced lease's Done did not close")
	}
	saysForced("Err", watched.Err())
}
