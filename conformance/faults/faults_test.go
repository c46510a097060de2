package faults_test

import (
	"context"
	"errors"
	"net"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/conformance/faults"
	"github.com/redlockgo/redlock/driver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// inner is a driver whose every Scripts method panics (the embedded
// interface is nil), and that takes every error for the server's.
type inner struct{ driver.Driver }

func (inner) Name() string { return "inner" }

func (inner) IsServerError(error) bool { return true }

// call calls method on d with zero arguments and a live context, and
// reports whether the inner driver was reached (it panics when it is).
func call(d driver.Driver, method string) (reached bool, err error) {
	defer func() {
		if recover() != nil {
			reached = true
		}
	}()
	m := reflect.ValueOf(d).MethodByName(method)
	args := []reflect.Value{reflect.ValueOf(context.Background())}
	for i := 1; i < m.Type().NumIn(); i++ {
		args = append(args, reflect.Zero(m.Type().In(i)))
	}
	out := m.Call(args)
	err, _ = out[1].Interface().(error)
	return false, err
}

// Every method of driver.Scripts asks the hook, under its own name; a
// dropped call does not reach the inner driver and fails with a network
// error that IsServerError does not take for the server's.
func TestEveryScriptMethodAsksTheHook(t *testing.T) {
	scripts := reflect.TypeFor[driver.Scripts]()
	var seen []faults.Call
	d, _ := faults.Wrap(inner{}, 2, func(c faults.Call) faults.Fault {
		seen = append(seen, c)
		return faults.Fault{Kind: faults.Drop}
	})
	for i := range scripts.NumMethod() {
		name := scripts.Method(i).Name
		reached, err := call(d, name)
		if reached {
			t.Errorf("%s: a dropped call reached the driver", name)
		}
		var ne net.Error
		if !errors.Is(err, faults.ErrInjected) || !errors.As(err, &ne) || d.IsServerError(err) {
			t.Errorf("%s: got %v, want an injected net.Error that is not a server error", name, err)
		}
		if len(seen) != i+1 || seen[i].Method != name || seen[i].Node != 2 || seen[i].N < 1 {
			t.Fatalf("%s: the hook saw %+v", name, seen)
		}
	}
	// With every call passed, each reaches the inner driver.
	d, _ = faults.Wrap(inner{}, 0, func(faults.Call) faults.Fault { return faults.Fault{} })
	for i := range scripts.NumMethod() {
		if reached, _ := call(d, scripts.Method(i).Name); !reached {
			t.Errorf("%s: a passed call did not reach the driver", scripts.Method(i).Name)
		}
	}
}

// Optional interfaces are the inner driver's: a wrapper of a driver that
// is not a Notifier is not one either.
func TestOptionalInterfaces(t *testing.T) {
	d, _ := faults.Wrap(inner{}, 0, nil)
	if _, ok := d.(driver.Notifier); ok {
		t.Error("the wrapper of a driver without Notifier is a Notifier")
	}
	d, _ = faults.Wrap(notifier{}, 0, nil)
	if _, ok := d.(driver.Notifier); !ok {
		t.Error("the wrapper of a Notifier is not one")
	}
	if s, ok := d.(driver.SingleServer); !ok || !s.SingleServer() {
		t.Error("the wrapper does not pass SingleServer on")
	}
}

type notifier struct {
	inner
	driver.Notifier
}

func (notifier) SingleServer() bool { return true }

// A delayed call fails at once with a timeout and reaches the server at
// Flush (or after its delay), on a goroutine the Driver waits for.
func TestDelay(t *testing.T) {
	var s faults.Schedule
	s.Add(faults.Rule{Node: faults.AnyNode, Op: "Extend", Key: "k", Nth: 2, Fault: faults.Fault{Kind: faults.Delay, After: time.Hour}})
	var reached atomic.Int64
	d, fd := faults.Wrap(extender{n: &reached}, 0, s.Hook)
	ctx := context.Background()
	if _, err := d.Extend(ctx, "probe", "probe:t", "probe:forced", "t", time.Second, "probe:t:1"); err != nil {
		t.Fatalf("a call on another key: %v", err)
	}
	if _, err := d.Extend(ctx, "k", "k:t", "k:forced", "t", time.Second, "k:t:1"); err != nil {
		t.Fatalf("the first call the rule matches: %v", err)
	}
	_, err := d.Extend(ctx, "k", "k:t", "k:forced", "t", time.Second, "k:t:1")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || fd.Pending() != 1 || reached.Load() != 2 {
		t.Fatalf("the delayed call: err %v, pending %d, reached %d", err, fd.Pending(), reached.Load())
	}
	fd.Flush()
	if fd.Pending() != 0 || reached.Load() != 3 {
		t.Fatalf("after Flush: pending %d, reached %d", fd.Pending(), reached.Load())
	}
	if _, err := d.Extend(ctx, "k", "k:t", "k:forced", "t", time.Second, "k:t:1"); err != nil {
		t.Fatalf("a call after the Nth: %v", err)
	}
}

// A stalled call waits for its context to end, then fails with a
// timeout; it reaches the server at Flush.
func TestStall(t *testing.T) {
	var reached atomic.Int64
	d, fd := faults.Wrap(extender{n: &reached}, 0, func(faults.Call) faults.Fault {
		return faults.Fault{Kind: faults.Stall, After: time.Hour}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := d.Extend(ctx, "k", "k:t", "k:forced", "t", time.Second, "k:t:1")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the stalled call returned before its context ended: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	var ne net.Error
	if err := <-done; !errors.As(err, &ne) || !ne.Timeout() || reached.Load() != 0 {
		t.Fatalf("the stalled call: err %v, reached %d", err, reached.Load())
	}
	fd.Flush()
	if reached.Load() != 1 {
		t.Fatalf("after Flush: reached %d", reached.Load())
	}
}

// A slow call returns the server's reply once it ran, at Flush, when its
// context is still live.
func TestSlow(t *testing.T) {
	var reached atomic.Int64
	d, fd := faults.Wrap(extender{n: &reached}, 0, func(faults.Call) faults.Fault {
		return faults.Fault{Kind: faults.Slow, After: time.Hour}
	})
	done := make(chan error, 1)
	go func() {
		_, err := d.Extend(context.Background(), "k", "k:t", "k:forced", "t", time.Second, "k:t:1")
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("the slow call returned before Flush: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	fd.Flush()
	if err := <-done; err != nil || reached.Load() != 1 {
		t.Fatalf("the slow call after Flush: err %v, reached %d", err, reached.Load())
	}
}

// A lost reply reaches the server, also when the caller's context ended.
func TestLoseReply(t *testing.T) {
	var reached atomic.Int64
	d, _ := faults.Wrap(extender{n: &reached}, 0, func(faults.Call) faults.Fault { return faults.Fault{Kind: faults.LoseReply} })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Extend(ctx, "k", "k:t", "k:forced", "t", time.Second, "k:t:1"); !errors.Is(err, faults.ErrInjected) || reached.Load() != 1 {
		t.Fatalf("got %v, reached %d", err, reached.Load())
	}
}

// A duplicated call returns the server's reply, and reaches the server
// again at Flush.
func TestDuplicate(t *testing.T) {
	var reached atomic.Int64
	d, fd := faults.Wrap(extender{n: &reached}, 0, func(faults.Call) faults.Fault {
		return faults.Fault{Kind: faults.Duplicate, After: time.Hour}
	})
	if v, err := d.Extend(context.Background(), "k", "k:t", "k:forced", "t", time.Second, "k:t:1"); err != nil || v != 1 || reached.Load() != 1 || fd.Pending() != 1 {
		t.Fatalf("the duplicated call: %d, err %v, reached %d, pending %d", v, err, reached.Load(), fd.Pending())
	}
	fd.Flush()
	if reached.Load() != 2 || fd.Pending() != 0 {
		t.Fatalf("after Flush: reached %d, pending %d", reached.Load(), fd.Pending())
	}
}

// A retried call reaches the server twice and returns the second reply.
func TestRetry(t *testing.T) {
	var reached atomic.Int64
	d, fd := faults.Wrap(extender{n: &reached}, 0, func(faults.Call) faults.Fault { return faults.Fault{Kind: faults.Retry} })
	if v, err := d.Extend(context.Background(), "k", "k:t", "k:forced", "t", time.Second, "k:t:1"); err != nil || v != 1 || reached.Load() != 2 || fd.Pending() != 0 {
		t.Fatalf("the retried call: %d, err %v, reached %d, pending %d", v, err, reached.Load(), fd.Pending())
	}
}

// extender counts the Extend calls that reach it with a live context.
type extender struct {
	inner
	n *atomic.Int64
}

func (e extender) Extend(ctx context.Context, _, _, _, _ string, _ time.Duration, _ string) (int64, error) {
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	e.n.Add(1)
	return 1, nil
}

// A Random schedule decides by the seed and the call alone.
func TestRandomReplays(t *testing.T) {
	r := faults.Random{Seed: 7, Rate: 0.5, MaxDelay: time.Second}
	kinds := map[faults.Kind]int{}
	for n := 1; n <= 200; n++ {
		c := faults.Call{Node: n % 3, Method: "Extend", N: n}
		f := r.Hook(c)
		if g := r.Hook(c); g != f {
			t.Fatalf("call %d: %v then %v", n, f, g)
		}
		kinds[f.Kind]++
	}
	if len(kinds) != 5 {
		t.Errorf("200 calls at rate 0.5 gave only the kinds %v", kinds)
	}
}

// listening is a Notifier whose Listen keeps deliver, for the test to
// send messages through.
type listening struct {
	notifier
	deliver *func(channel, payload string)
}

func (l listening) Listen(_ context.Context, deliver func(channel, payload string)) (driver.Listener, error) {
	*l.deliver = deliver
	return nil, nil
}

// A message held back comes at ReleaseMessages, and one duplicated comes
// twice, also when it was held back.
func TestMessages(t *testing.T) {
	var send func(channel, payload string)
	d, fd := faults.Wrap(listening{deliver: &send}, 0, nil)
	var got []string
	if _, err := d.(driver.Notifier).Listen(context.Background(), func(_, payload string) { got = append(got, payload) }); err != nil {
		t.Fatal(err)
	}
	fd.HoldMessages(func(_, payload string) bool { return payload != "passed" })
	fd.DuplicateMessages(func(_, payload string) bool { return payload != "once" })
	send("c", "once")
	send("c", "twice")
	send("c", "passed")
	if want := []string{"passed", "passed"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("before ReleaseMessages: got %q, want %q", got, want)
	}
	fd.ReleaseMessages()
	fd.DuplicateMessages(nil)
	send("c", "after")
	if want := []string{"passed", "passed", "once", "twice", "twice", "after"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
}
