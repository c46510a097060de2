// Package faults wraps a driver.Driver so that the conformance suite can
// lose what a real network loses: a script call dropped before it reaches
// the server, applied with its reply lost, or delayed past the node
// timeout and applied later. Before every method of driver.Scripts (the
// generated part, zz_generated.go, one method per operation of package
// spec and per native command) the wrapper asks a Hook what to do with
// the call; a Schedule of rules and a seeded Random schedule are Hooks.
// With every call passed, a wrapped driver behaves as the inner one,
// optional interfaces included.
package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/driver"
)

// Kind is what happens to one call.
type Kind int

const (
	// Pass runs the call as is.
	Pass Kind = iota
	// Drop fails the call without sending it: the server never sees it.
	Drop
	// LoseReply runs the call to completion, whatever the caller's
	// context, and fails it as if the reply had been lost on the way back.
	LoseReply
	// Delay fails the call at once with a timeout, and runs it on the
	// server later: after Fault.After, or at Flush.
	Delay
	// Stall is Delay on a server that does not answer (paused, or behind
	// a partition that drops packets): the call fails with a timeout only
	// when its context ends (or at Flush).
	Stall
	// Slow is a server that answers late (paused for a moment): the call
	// runs after Fault.After, or at Flush, and its reply comes back then,
	// unless the call's context ended first, which fails it with a timeout
	// (the call still runs then). Random schedules do not use it.
	Slow
	// Duplicate runs the call as is, and a copy of it later (after
	// Fault.After, or at Flush): a request delivered twice, by a client
	// that retried it on a broken connection or by the network. Random
	// schedules do not use it.
	Duplicate
	// Retry runs the call twice, one after the other, and returns the
	// second reply: a client that lost the first reply (its connection
	// broke) and sent the call again. Random schedules do not use it.
	Retry
)

func (k Kind) String() string {
	return [...]string{"pass", "drop", "lose-reply", "delay", "stall", "slow", "duplicate", "retry"}[k]
}

// Fault is what the hook decides for one call.
type Fault struct {
	Kind  Kind
	After time.Duration // Delay, Stall, Slow, Duplicate: how long after the call the server gets it (its copy)
}

// Call is a script call about to be made.
type Call struct {
	Node   int      // the index given to Wrap
	Op     string   // the operation of package spec ("Extend"), also for its natives
	Method string   // the method of driver.Scripts: Op, or Op and a native's name ("ExtendSetIfeq")
	Keys   []string // the call's KEYS
	// Tickets are the ticket ids the call names (a Mutex's "ticket" and
	// "mark" arguments; a MultiLock's, one per name), which are no keys.
	Tickets []string
	N       int // 1 for the first call of Op on this driver, 2 for the second, ...
}

// Hook decides what happens to a call. It is called from many goroutines.
type Hook func(Call) Fault

// ErrInjected is wrapped by every error the wrapper makes up. The errors
// are net.Errors, so that core takes them for a network failure: the
// wrapped driver's IsServerError reports false for them.
var ErrInjected = errors.New("faults: injected network failure")

// Error is the error of a faulted call.
type Error struct {
	Call  Call
	Fault Fault
}

func (e *Error) Error() string {
	return fmt.Sprintf("faults: node %d: %s (call %d of %s): %s", e.Call.Node, e.Call.Method, e.Call.N, e.Call.Op, e.Fault.Kind)
}

func (e *Error) Unwrap() error { return ErrInjected }

// Timeout is true for a delayed or stalled call, which the caller gave up
// waiting for.
func (e *Error) Timeout() bool { return e.Fault.Kind != Drop && e.Fault.Kind != LoseReply }

// Temporary is true: every injected failure is.
func (e *Error) Temporary() bool { return true }

// lateTimeout bounds a call that runs detached from its caller's context
// (LoseReply, Delay), so that a dead server cannot hold the test up.
const lateTimeout = 5 * time.Second

// Driver is a driver.Driver whose script calls go through a Hook.
type Driver struct {
	inner driver.Driver
	node  int
	hook  Hook

	mu      sync.Mutex
	calls   map[string]int // by operation
	delayed *delayed       // the calls delayed since the last Flush
	pending atomic.Int64

	msgs messages
}

// messages are the notifications a Driver holds back (HoldMessages).
type messages struct {
	mu    sync.Mutex
	match func(channel, payload string) bool // nil: none is held
	held  []func()                           // their deliveries, in order
	twice func(channel, payload string) bool // nil: none is delivered twice
}

// delayed are the calls delayed between two Flushes: a WaitGroup of its
// own, so that no call is added to one that Flush waits for.
type delayed struct {
	flush chan struct{} // closed by Flush: they run now
	late  sync.WaitGroup
}

// Wrap wraps inner, node number node, with hook. It returns the driver to
// give core.New, which has inner's optional interfaces (driver.Notifier),
// and the *Driver that steers it.
func Wrap(inner driver.Driver, node int, hook Hook) (driver.Driver, *Driver) {
	d := &Driver{inner: inner, node: node, hook: hook, calls: map[string]int{}, delayed: &delayed{flush: make(chan struct{})}}
	if n, ok := inner.(driver.Notifier); ok {
		return notifying{d, n}, d
	}
	return d, d
}

// notifying is a Driver over a driver that is a driver.Notifier. The
// notification calls are not faulted: they are not script calls; the
// messages can be held back (HoldMessages).
type notifying struct {
	*Driver
	driver.Notifier
}

// Listen listens through the inner driver, holding back the messages
// that HoldMessages matches. Its deliveries, held or not, are made one at
// a time, as driver.Notifier promises.
func (n notifying) Listen(ctx context.Context, deliver func(channel, payload string)) (driver.Listener, error) {
	var one sync.Mutex
	serial := func(channel, payload string) {
		one.Lock()
		defer one.Unlock()
		deliver(channel, payload)
	}
	m := &n.Driver.msgs
	return n.Notifier.Listen(ctx, func(channel, payload string) {
		m.mu.Lock()
		deliver := func() { serial(channel, payload) }
		if m.twice != nil && m.twice(channel, payload) {
			deliver = func() { serial(channel, payload); serial(channel, payload) }
		}
		if m.match != nil && m.match(channel, payload) {
			m.held = append(m.held, deliver)
			m.mu.Unlock()
			return
		}
		m.mu.Unlock()
		deliver()
	})
}

// DuplicateMessages delivers the notifications whose channel and payload
// match twice, the copy right after the message (or, held back, on its
// release): a message that a server or the network sent again. A nil
// match delivers each message once.
func (d *Driver) DuplicateMessages(match func(channel, payload string) bool) {
	d.msgs.mu.Lock()
	defer d.msgs.mu.Unlock()
	d.msgs.twice = match
}

// HoldMessages holds back, until ReleaseMessages, the notifications whose
// channel and payload match: messages delayed in the network, or by a
// listener that stalled.
func (d *Driver) HoldMessages(match func(channel, payload string) bool) {
	d.msgs.mu.Lock()
	defer d.msgs.mu.Unlock()
	d.msgs.match = match
}

// ReleaseMessages delivers the messages held back, in the order they
// came, and holds back no more. Call it before the Client closes: no
// message is delivered after its Listener closed.
func (d *Driver) ReleaseMessages() {
	d.msgs.mu.Lock()
	held := d.msgs.held
	d.msgs.match, d.msgs.held = nil, nil
	d.msgs.mu.Unlock()
	for _, deliver := range held {
		deliver()
	}
}

var (
	_ driver.Driver       = (*Driver)(nil)
	_ driver.SingleServer = (*Driver)(nil)
	_ driver.Replicated   = (*Driver)(nil)
	_ driver.Notifier     = notifying{}
)

// run asks the hook about a call and does what it says; f makes the call.
func run[T any](ctx context.Context, d *Driver, op, method string, keys, tickets []string, f func(context.Context) (T, error)) (T, error) {
	var zero T
	d.mu.Lock()
	d.calls[op]++
	c := Call{Node: d.node, Op: op, Method: method, Keys: keys, Tickets: tickets, N: d.calls[op]}
	d.mu.Unlock()
	fault := Fault{}
	if d.hook != nil {
		fault = d.hook(c)
	}
	switch fault.Kind {
	case Pass:
		return f(ctx)
	case LoseReply:
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lateTimeout)
		defer cancel()
		f(lctx)
	case Retry:
		f(ctx)
		return f(ctx)
	case Duplicate:
		v, err := f(ctx)
		runLater(ctx, d, fault.After, f)
		return v, err
	case Delay, Stall, Slow:
		answered, flush := runLater(ctx, d, fault.After, f)
		switch fault.Kind {
		case Stall:
			select {
			case <-ctx.Done():
			case <-flush:
			}
		case Slow:
			select {
			case <-ctx.Done():
			case r := <-answered:
				return r.v, r.err
			}
		}
	}
	return zero, &Error{Call: c, Fault: fault}
}

type result[T any] struct {
	v   T
	err error
}

// runLater makes the call f after after, or at the next Flush, detached
// from ctx. It returns the channel its outcome comes on, and the one the
// Flush that runs it closes.
func runLater[T any](ctx context.Context, d *Driver, after time.Duration, f func(context.Context) (T, error)) (<-chan result[T], <-chan struct{}) {
	d.mu.Lock()
	g := d.delayed
	g.late.Add(1)
	d.mu.Unlock()
	d.pending.Add(1)
	lctx := context.WithoutCancel(ctx)
	answered := make(chan result[T], 1)
	go func() {
		defer g.late.Done()
		defer d.pending.Add(-1)
		t := time.NewTimer(after)
		defer t.Stop()
		select {
		case <-t.C:
		case <-g.flush:
		}
		lctx, cancel := context.WithTimeout(lctx, lateTimeout)
		defer cancel()
		v, err := f(lctx)
		answered <- result[T]{v, err}
	}()
	return answered, g.flush
}

// Pending is how many delayed calls have not reached the server yet.
func (d *Driver) Pending() int { return int(d.pending.Load()) }

// Wait returns once every call delayed since the last Flush has run.
func (d *Driver) Wait() {
	d.mu.Lock()
	g := d.delayed
	d.mu.Unlock()
	g.late.Wait()
}

// Flush runs every delayed call now, and returns once they have run.
// Calls delayed meanwhile wait for the next Flush.
func (d *Driver) Flush() {
	d.mu.Lock()
	g := d.delayed
	d.delayed = &delayed{flush: make(chan struct{})}
	close(g.flush)
	d.mu.Unlock()
	g.late.Wait()
}

// Calls is how many calls of op (an operation of package spec) were made.
func (d *Driver) Calls(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

func (d *Driver) Name() string  { return d.inner.Name() }
func (d *Driver) Protocol() int { return d.inner.Protocol() }

// IsServerError is false for the injected errors, else the inner driver's.
func (d *Driver) IsServerError(err error) bool {
	return !errors.Is(err, ErrInjected) && d.inner.IsServerError(err)
}

// Close runs the delayed calls, then closes the inner driver.
func (d *Driver) Close() error {
	d.Flush()
	return d.inner.Close()
}

// SingleServer is the inner driver's answer; false when it has none, as
// core assumes for a driver without the method.
func (d *Driver) SingleServer() bool {
	s, ok := d.inner.(driver.SingleServer)
	return ok && s.SingleServer()
}

// Replicas is the inner driver's count; 0 when it cannot wait for
// replicas, as core assumes for a driver without the method.
func (d *Driver) Replicas(ctx context.Context) (driver.Replicas, error) {
	r, ok := d.inner.(driver.Replicated)
	if !ok {
		return driver.Replicas{}, nil
	}
	return r.Replicas(ctx)
}

// WaitReplicas asks the hook, as every operation does, then runs the
// inner driver's WaitReplicas.
func (d *Driver) WaitReplicas(ctx context.Context, marker string, n int, timeout time.Duration) (int, error) {
	return run(ctx, d, "WaitReplicas", "WaitReplicas", []string{marker}, nil, func(ctx context.Context) (int, error) {
		r, ok := d.inner.(driver.Replicated)
		if !ok {
			return 0, fmt.Errorf("%w: the %s driver cannot wait for replicas", driver.ErrInvalid, d.inner.Name())
		}
		return r.WaitReplicas(ctx, marker, n, timeout)
	})
}

// ticketIDs is lib/ticket_ids.lua: a MultiLock call's ticket ids, each
// name's tickets key (the fourth of its keys), ":" and its part of list.
func ticketIDs(keys []string, list string) []string {
	rests := strings.Split(list, " ")
	var ids []string
	for i := 3; i < len(keys); i += 4 {
		rest := ""
		if j := i / 4; j < len(rests) {
			rest = rests[j]
		}
		ids = append(ids, keys[i]+":"+rest)
	}
	return ids
}
