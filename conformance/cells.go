package conformance

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/conformance/testenv"
	"github.com/redlockgo/redlock/core"
)

// A cell is one driver on one server and topology with one wait
// strategy; its subtests are the primitives' groups. Every combination is
// a subtest, also those that cannot apply: they are skipped with a
// message starting "n/a: " and the reason, which `redlock matrix` shows in
// the cell, so that a cell is never silently missing nor shown as passed.
// Where "cannot apply" is itself a promise (Notify without RESP3 or
// without keyspace notifications must fail fast in New), the cell checks
// it before it skips.

// notApplicable is the prefix of a cell's skip message.
const notApplicable = "n/a: "

// withoutNotifications are the servers that have no keyspace
// notifications, so no Notify wait strategy.
var withoutNotifications = map[string]bool{"miniredis": true}

// serverOptions are the Client options of a server's cells. miniredis
// runs every script in a fresh Lua interpreter under one server-wide lock,
// about ten times slower than a real server, so with the cases running in
// parallel a request can wait longer than the default node timeout
// (TTL/10, 20-30ms for the short TTLs of expiry cases). A node timeout
// must be below the TTL: this one is below the shortest a case gives
// (200ms).
var serverOptions = map[string][]core.Option{"miniredis": {core.WithNodeTimeout(190 * time.Millisecond)}}

// ops scales the operation count of a throughput-heavy case to the cell:
// a tenth on miniredis, where every script costs about ten times as much
// (see serverOptions) and all nodes share this process's CPU, and on five
// nodes, the costliest topology, which exists for the quorum arithmetic
// (3 of 5), not for throughput. The whole suite stays within minutes on
// two cores.
func (e env) ops(n int) int {
	if e.server == "miniredis" || len(e.addrs) >= 5 {
		return max(n/10, 10)
	}
	return n
}

// redisServer is the one Redis each driver's cells run on, so that a run
// checks Redis 7, Redis 8 and Valkey 9 at about the cost of two servers:
// go-redis and redigo on Redis 7, rueidis on Redis 8, every driver on
// Valkey 9 (and on miniredis). The drivers send the same scripts; each
// server's replies are checked by the drivers that run on it.
var redisServer = map[string]string{"goredis": "redis7", "redigo": "redis7", "rueidis": "redis8"}

// isRedis reports whether server is a Redis server (not Valkey, not
// miniredis).
func isRedis(server string) bool { return server == "redis7" || server == "redis8" }

// runsOn reports whether the driver's cells run on server, and if not,
// why.
func runsOn(driver, server string) (ok bool, why string) {
	if !isRedis(server) || redisServer[driver] == "" || redisServer[driver] == server {
		return true, ""
	}
	var others []string
	for _, d := range slices.Sorted(maps.Keys(redisServer)) {
		if redisServer[d] == server {
			others = append(others, d)
		}
	}
	return false, fmt.Sprintf("%s runs on %s and valkey9; %s runs %s", driver, redisServer[driver], server, strings.Join(others, " and "))
}

// quorumServer is the one real server each driver's quorum cells run on:
// the round is the core's, the same on every server, and a driver's
// replies from each server are checked in its one-node and Cluster cells,
// so that each server's quorum runs once, not once per driver. (On
// in-process miniredis, where they cost little, every driver's run.)
// rueidis's is Valkey 9 rather than its Redis 8, so that a quorum runs
// over Valkey's native release (DELIFEQ) as well as over the Lua one that
// Redis 7 and 8 share.
var quorumServer = map[string]string{"goredis": "redis7", "redigo": "redis7", "rueidis": "valkey9"}

// cell returns the env of one cell, or skips the cell when it cannot
// apply.
func cell(t *testing.T, h Harness, server testenv.Server, topo topology, s core.WaitStrategy) env {
	e := env{h: h, server: server.Name, strategy: s}
	ok, why := runsOn(h.Driver, server.Name)
	switch {
	case !ok:
		t.Skip(notApplicable + why)
	case topo.cluster && h.OpenCluster == nil:
		t.Skipf(notApplicable+"%s has no Redis Cluster client", h.Driver)
	case topo.cluster && server.Name == "miniredis":
		t.Skipf(notApplicable + "miniredis is one in-process server, not a Redis Cluster")
	case topo.cluster && server.Cluster == nil:
		t.Skipf(notApplicable+"no %s cluster in this run (scripts/test.sh starts one of each server)", server.Name)
	case topo.cluster:
		e.addrs, e.cluster = []string{strings.Join(server.Cluster, ",")}, true
	case h.DecodingOf != "" && topo.nodes > 1:
		t.Skipf(notApplicable+"decodes replies unlike %s and nothing else: its quorum over %d nodes runs there", h.DecodingOf, topo.nodes)
	case len(server.Nodes) < topo.nodes:
		t.Skipf(notApplicable+"needs %d independent masters; this run has %d %s nodes", topo.nodes, len(server.Nodes), server.Name)
	case topo.nodes > 3 && h.Driver != "goredis":
		t.Skipf(notApplicable + "the quorum of 5 is the core's round over the same driver calls as the quorum of 3: it runs in the goredis columns")
	case topo.nodes > 1 && server.Name != "miniredis" && quorumServer[h.Driver] != "" && server.Name != quorumServer[h.Driver]:
		t.Skipf(notApplicable+"%s's quorum runs on %s; on %s its one-node and Cluster cells check its replies",
			h.Driver, quorumServer[h.Driver], server.Name)
	default:
		e.addrs = server.Nodes[:topo.nodes]
	}
	if s == core.Notify {
		e.notifyFailsFast(t)
	}
	return e
}

// notifyFailsFast skips a Notify cell where Notify cannot work, after
// checking that it says so with ErrNotifyUnsupported: New for a driver
// that does not speak RESP3, Ping (New sends nothing) for a server
// without keyspace notifications.
func (e env) notifyFailsFast(t *testing.T) {
	var why string
	if p := e.drivers(t, e.addrs[:1])[0].Protocol(); p != 3 {
		why = fmt.Sprintf("%s speaks RESP%d, Notify needs RESP3", e.h.Driver, p)
	} else if withoutNotifications[e.server] {
		why = e.server + " has no keyspace notifications"
	} else {
		return
	}
	call := "New"
	c, err := core.New(e.drivers(t, e.addrs), core.WithWaitStrategy(core.Notify))
	if err == nil {
		defer c.Close()
		call, err = "Ping", c.Ping(ctxFor(t, 10*time.Second))
	}
	if !errors.Is(err, core.ErrNotifyUnsupported) || !strings.Contains(err.Error(), "Poll") {
		t.Fatalf("%s with Notify where %s: got %v, want ErrNotifyUnsupported pointing to Poll", call, why, err)
	}
	t.Skipf(notApplicable+"%s; %s fails fast with ErrNotifyUnsupported (checked)", why, call)
}

// notifying returns a node of a server with keyspace notifications.
func notifying(t *testing.T, servers []testenv.Server) string {
	for _, s := range servers {
		if !withoutNotifications[s.Name] {
			return s.Nodes[0]
		}
	}
	t.Skip(notApplicable + "no server with keyspace notifications in this run")
	return ""
}

// Topologies names the topologies of the cells, in run order.
func Topologies() []string {
	var out []string
	for _, t := range topologies {
		out = append(out, t.name)
	}
	return out
}

// Primitives names the primitives' groups of every cell, in run order.
func Primitives() []string {
	var out []string
	for _, p := range primitives {
		out = append(out, p.name)
	}
	return out
}
