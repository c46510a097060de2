package conformance

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// gate holds back a Client's calls of some operations while it is shut:
// they wait there until it opens, which it does at the end of the test
// at the latest.
type gate struct {
	shut   atomic.Bool
	hit    chan struct{} // a call reached the gate
	opened chan struct{}
	once   sync.Once
}

// gatedClient is a Client whose calls of the operations match selects
// wait at the returned gate while it is shut (it starts open).
func (e env) gatedClient(t *testing.T, match func(op string) bool, opts ...core.Option) (*core.Client, *gate) {
	g := &gate{hit: make(chan struct{}, 1), opened: make(chan struct{})}
	t.Cleanup(g.open)
	c, _ := e.faultyClient(t, func(c faults.Call) faults.Fault {
		if match(c.Op) && g.shut.Load() {
			select {
			case g.hit <- struct{}{}:
			default:
			}
			<-g.opened
		}
		return faults.Fault{}
	}, opts...)
	return c, g
}

// close shuts the gate: the next matching calls wait at it.
func (g *gate) close() { g.shut.Store(true) }

// open lets every call through, for good.
func (g *gate) open() {
	g.once.Do(func() {
		g.shut.Store(false)
		close(g.opened)
	})
}

// reached fails the test unless a call reaches the gate within d; what
// says which call was expected.
func (g *gate) reached(t *testing.T, d time.Duration, what string) {
	t.Helper()
	select {
	case <-g.hit:
	case <-time.After(d):
		t.Fatal(what + " made no attempt: it was not woken")
	}
}
