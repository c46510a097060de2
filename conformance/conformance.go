// Package conformance is the behaviour every driver must show, written once.
// A driver's whole test is a harness and one call:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{Driver: "goredis", Open: ...})
//	}
//
// Run runs every case against real servers (see internal/testenv), on one
// node and on a three-node quorum, with each wait strategy the driver can
// use, and checks that no goroutine is left behind.
package conformance

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
	"github.com/redlockgo/redlock/internal/testenv"
)

// Harness makes fresh drivers for the cases.
type Harness struct {
	// Driver names the driver in test names and expected error messages.
	Driver string
	// Open returns a driver over a new client connected to addr; the
	// harness closes the client in t.Cleanup.
	Open func(t testing.TB, addr string) driver.Driver
	// OpenNil calls the driver's New with a nil client.
	OpenNil func() (driver.Driver, error)
}

// topology is a set of nodes the cases run on.
type topology struct {
	name  string
	nodes int
}

var topologies = []topology{{"single", 1}, {"quorum3", 3}}

// primitives are the groups every cell runs, named so that a test's name
// reads driver/server/topology/strategy/primitive/case.
var primitives = []struct {
	name string
	run  func(*testing.T, env)
}{
	{"Mutex", runMutex},
}

// env is one cell: a driver on a topology with a wait strategy.
type env struct {
	h        Harness
	addrs    []string
	strategy core.WaitStrategy
}

// Run runs every conformance case for the driver h makes.
func Run(t *testing.T, h Harness) {
	ignore := goleak.IgnoreCurrent()
	// Every client a case opens is closed in its subtest's cleanup, which
	// runs before t.Run returns; so this one finds only real leaks.
	t.Run(h.Driver, func(t *testing.T) { run(t, h) })
	goleak.VerifyNone(t, ignore)
}

func run(t *testing.T, h Harness) {
	nodes := testenv.Nodes(t)
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, env{h: h, addrs: nodes[:1], strategy: core.Poll}) })
	t.Run("NotifyNeedsRESP3", func(t *testing.T) { testNotifyNeedsRESP3(t, h, nodes[0]) })
	valkey := testenv.ValkeyNodes(t)
	for _, server := range []struct {
		name  string
		nodes []string
	}{{"redis7", nodes}, {"valkey9", valkey}} {
		t.Run(server.name+"/NativeDetection", func(t *testing.T) { testNativeDetection(t, h, server.name, server.nodes[0]) })
		for _, topo := range topologies {
			for _, s := range strategies(t, h, server.nodes[0]) {
				e := env{h: h, addrs: server.nodes[:topo.nodes], strategy: s}
				t.Run(server.name+"/"+topo.name+"/"+s.String(), func(t *testing.T) {
					for _, p := range primitives {
						t.Run(p.name, func(t *testing.T) { p.run(t, e) })
					}
				})
			}
		}
	}
	t.Run("Notify", func(t *testing.T) { runNotify(t, h) })
}

// strategies are the wait strategies the driver can use.
func strategies(t *testing.T, h Harness, addr string) []core.WaitStrategy {
	if h.Open(t, addr).Protocol() == 3 {
		return []core.WaitStrategy{core.Notify, core.Poll}
	}
	return []core.WaitStrategy{core.Poll}
}

// drivers opens one driver per address.
func (e env) drivers(t testing.TB, addrs []string) []core.Driver {
	ds := make([]core.Driver, len(addrs))
	for i, a := range addrs {
		ds[i] = e.h.Open(t, a)
	}
	return ds
}

// client returns a Client over the cell's nodes, closed at t.Cleanup.
func (e env) client(t testing.TB, opts ...core.Option) *core.Client {
	return e.clientOn(t, e.addrs, opts...)
}

func (e env) clientOn(t testing.TB, addrs []string, opts ...core.Option) *core.Client {
	t.Helper()
	c, err := core.New(e.drivers(t, addrs), append([]core.Option{core.WithWaitStrategy(e.strategy)}, opts...)...)
	if err != nil {
		t.Fatalf("core.New(%s): %v", e.h.Driver, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// admin returns a plain go-redis client to node i, to inspect and damage
// the server's state behind the library's back.
func (e env) admin(t testing.TB, i int) *redis.Client {
	r := redis.NewClient(&redis.Options{Addr: e.addrs[i]})
	t.Cleanup(func() { r.Close() })
	return r
}

// name returns a lock name no other case uses.
func name(t testing.TB) string { return t.Name() + "/" + rand.Text()[:8] }

// lockKey is where a lock called name lives with the default prefix.
func lockKey(name string) string { return "redlock:{" + name + "}" }

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
