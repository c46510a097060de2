package bench_test

import (
	"context"
	"testing"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// BenchmarkObserver measures uncontended TryLock+Unlock on one node
// without an Observer and with one that does nothing. Without one, the
// allocations per operation must be those of a Client before observers
// existed: observing costs only a nil check then.
func BenchmarkObserver(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchObserved(b) })
	b.Run("observer", func(b *testing.B) { benchObserved(b, core.WithObserver(nopObserver{})) })
}

func benchObserved(b *testing.B, opts ...core.Option) {
	ctx := context.Background()
	m := benchClient(b, testenv.Nodes(b)[:1], opts...).Mutex("bench-observed")
	b.ReportAllocs()
	for b.Loop() {
		lockUnlock(b, ctx, m)
	}
}

type nopObserver struct{}

func (nopObserver) Acquired(core.AcquireEvent) {}
func (nopObserver) Released(core.ReleaseEvent) {}
func (nopObserver) Extended(core.ExtendEvent)  {}
func (nopObserver) Lost(core.LostEvent)        {}
