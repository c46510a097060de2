package conformance

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/core"
)

// scriptSpy watches every script call a Client sends, on all its nodes:
// it counts them, counts those sent after the test marked the Client
// closed, and holds each one back by delay first, as a loaded machine
// would (the call's context keeps running meanwhile).
type scriptSpy struct {
	calls  atomic.Int64
	late   atomic.Int64 // calls after closed was set
	closed atomic.Bool
	delay  atomic.Int64 // a time.Duration

	mu     sync.Mutex
	recent []string // the last calls, "Op@node", for a failure's message
}

func (s *scriptSpy) call(c faults.Call) {
	s.mu.Lock()
	s.recent = append(s.recent[max(0, len(s.recent)-15):], fmt.Sprintf("%s@%d@%s", c.Method, c.Node, time.Now().Format("05.000")))
	s.mu.Unlock()
	s.calls.Add(1)
	if s.closed.Load() {
		s.late.Add(1)
	}
	time.Sleep(time.Duration(s.delay.Load()))
}

// spyClient returns a Client over the cell's nodes whose drivers report
// to spy, closed at t.Cleanup; opts come after the cell's defaults.
func (e env) spyClient(t testing.TB, spy *scriptSpy, opts ...core.Option) *core.Client {
	t.Helper()
	c, err := core.New(e.spyDrivers(t, spy), append([]core.Option{core.WithWaitStrategy(e.strategy)}, opts...)...)
	if err != nil {
		t.Fatalf("core.New(%s): %v", e.h.Driver, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// spyDrivers opens the cell's drivers wrapped (package faults) to report
// every script call to spy, keeping the optional interfaces package core
// looks for.
func (e env) spyDrivers(t testing.TB, spy *scriptSpy) []core.Driver {
	ds := e.drivers(t, e.addrs)
	for i, d := range ds {
		ds[i], _ = faults.Wrap(d, i, func(c faults.Call) faults.Fault {
			spy.call(c)
			return faults.Fault{}
		})
	}
	return ds
}

// last returns the last calls the spy saw, oldest first.
func (s *scriptSpy) last() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.recent)
}
