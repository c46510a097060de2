// Package conformance is the behaviour every driver must show, written once.
// A driver's whole test is a harness and one call:
//
//	func TestConformance(t *testing.T) {
//		conformance.Run(t, conformance.Harness{Driver: "goredis", Open: ...})
//	}
//
// Run runs every case against real servers (see package testenv), on one
// node, on a three-node quorum and on a Redis Cluster, with each wait
// strategy the driver can use, and checks that no goroutine is left behind.
package conformance

import (
	"context"
	"crypto/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/driver"
)

// Harness makes fresh drivers for the cases.
type Harness struct {
	// Driver names the driver in test names and expected error messages.
	Driver string
	// Open returns a driver over a new client connected to addr; the
	// harness closes the client in t.Cleanup.
	Open func(t testing.TB, addr string) driver.Driver
	// OpenAs is Open logged in as the ACL user with password. Nil for a
	// driver that cannot: the cases about access control are then not
	// applicable.
	OpenAs func(t testing.TB, addr, user, password string) driver.Driver
	// OpenNil calls the driver's New with a nil client.
	OpenNil func() (driver.Driver, error)
	// OpenCluster returns a driver over a new Redis Cluster client with
	// the seed addresses; the harness closes the client in t.Cleanup. Nil
	// for a driver without a cluster client: its cluster cells are then
	// skipped as not applicable.
	OpenCluster func(t testing.TB, seeds []string) driver.Driver
	// DecodingOf, when set, names the harness this one differs from only
	// in how its client decodes replies (go-redis set to RESP2 as against
	// RESP3). Its cells on one node and on a Cluster run; its quorum cells
	// would repeat that harness's round over the same driver code and are
	// not applicable.
	DecodingOf string
}

// topology is a set of nodes the cases run on: independent masters, or
// one Redis Cluster, which counts as one node.
type topology struct {
	name    string
	nodes   int
	cluster bool
}

var topologies = []topology{{"single", 1, false}, {"quorum3", 3, false}, {"quorum5", 5, false}, {"cluster", 1, true}}

// primitives are the groups every cell runs, named so that a test's name
// reads driver/server/topology/strategy/primitive/case.
var primitives = []struct {
	name string
	run  func(*testing.T, env)
}{
	{"Mutex", runMutex},
	{"FairMutex", runFairMutex}, {"RWMutex", runRWMutex},
	{"MultiLock", runMultiLock},
	{"Semaphore", runSemaphore}, {"Latch", runLatch},
	{"Client", runClient},
}

// env is one cell: a driver on a topology with a wait strategy. In a
// cluster cell, addrs has one entry, the cluster's seeds joined by commas:
// the cluster is one node to the Client, and admin(t, 0) reaches every key.
type env struct {
	h        Harness
	server   string // redis7, valkey9, miniredis
	addrs    []string
	cluster  bool
	strategy core.WaitStrategy
}

// Run runs every conformance case for the driver h makes.
func Run(t *testing.T, h Harness) {
	ignore := goleak.IgnoreCurrent()
	// Every client a case opens is closed in its subtest's cleanup, which
	// runs before t.Run returns; so this one finds only real leaks.
	t.Run(h.Driver, func(t *testing.T) { run(t, h) })
	goleak.VerifyNone(t, append(clusterClientTimers, ignore, toxiproxyStuck)...)
}

// toxiproxyStuck is a goroutine of toxiproxy's latency toxic that blocks
// for good when a client drops its connection while a reply waits in the
// toxic: its send to the link's writer (toxics/latency.go in toxiproxy
// v2.5.0) has no way out once the writer returned. The cases that time
// out a slow node drop such connections; the goroutine is toxiproxy's.
var toxiproxyStuck = goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*LatencyToxic).Pipe")

func run(t *testing.T, h Harness) {
	servers := testenv.Servers(t)
	checkDeclaredKeys()
	undeclared := undeclaredCount(t, servers)
	t.Cleanup(func() { // after the cells, which run in parallel once run returns
		if n := undeclaredCount(t, servers) - undeclared; n > 0 {
			t.Errorf("scripts opened keys not in their KEYS %d times while the suite ran: the servers' logs name each (UNDECLARED)", n)
		}
	})
	first := env{h: h, server: servers[0].Name, addrs: servers[0].Nodes[:1], strategy: core.Poll}
	t.Run("BadInput", func(t *testing.T) { testBadInput(t, first) })
	t.Run("NotifyNeedsRESP3", func(t *testing.T) { testNotifyNeedsRESP3(t, h, notifying(t, servers)) })
	for _, server := range servers {
		t.Run(server.Name+"/NativeDetection", func(t *testing.T) { testNativeDetection(t, h, server.Name, server.Nodes[0]) })
		for _, topo := range topologies {
			for _, s := range []core.WaitStrategy{core.Notify, core.Poll} {
				t.Run(server.Name+"/"+topo.name+"/"+s.String(), func(t *testing.T) {
					e := cell(t, h, server, topo, s) // skips, as n/a, a cell that cannot apply
					// Cells run side by side, so that a primitive's slowest
					// case does not leave the binary's other -parallel slots
					// idle until it ends.
					t.Parallel()
					for _, p := range primitives {
						t.Run(p.name, func(t *testing.T) { p.run(t, e) })
					}
				})
			}
		}
	}
	t.Run("Notify", func(t *testing.T) { runNotify(t, h) })
}

// runCases runs each of a primitive's cases in parallel in e.
func runCases(t *testing.T, e env, cases map[string]func(*testing.T, env)) {
	for n, f := range cases {
		t.Run(n, func(t *testing.T) {
			t.Parallel()
			f(t, e)
		})
	}
}

// drivers opens one driver per address.
func (e env) drivers(t testing.TB, addrs []string) []core.Driver {
	ds := make([]core.Driver, len(addrs))
	for i, a := range addrs {
		if e.cluster {
			ds[i] = e.h.OpenCluster(t, strings.Split(a, ","))
		} else {
			ds[i] = e.h.Open(t, a)
		}
	}
	return ds
}

// client returns a Client over the cell's nodes, closed at t.Cleanup.
func (e env) client(t testing.TB, opts ...core.Option) *core.Client {
	return e.clientOn(t, e.addrs, opts...)
}

func (e env) clientOn(t testing.TB, addrs []string, opts ...core.Option) *core.Client {
	t.Helper()
	return e.clientOver(t, e.drivers(t, addrs), opts...)
}

// clientOver returns a Client over ds with the cell's options, closed at
// t.Cleanup.
func (e env) clientOver(t testing.TB, ds []core.Driver, opts ...core.Option) *core.Client {
	t.Helper()
	defaults := append([]core.Option{core.WithWaitStrategy(e.strategy)}, e.cellOptions()...)
	c, err := core.New(ds, append(defaults, opts...)...)
	if err != nil {
		t.Fatalf("core.New(%s): %v", e.h.Driver, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// admin returns a plain go-redis client to node i, to inspect and damage
// the server's state behind the library's back; in a cluster cell, a
// cluster client, which routes each key to its master (a command without
// a key, such as KEYS or PUBSUB, reaches one node only: see cluster.go).
func (e env) admin(t testing.TB, i int) redis.UniversalClient {
	var r redis.UniversalClient
	if e.cluster {
		r = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(e.addrs[i], ",")})
	} else {
		r = redis.NewClient(&redis.Options{Addr: e.addrs[i]})
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// name returns a lock name no other case uses.
func name(t testing.TB) string { return t.Name() + "/" + rand.Text()[:8] }

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
