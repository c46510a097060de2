package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"

	"github.com/redlockgo/redlock/bench/cmd/lockbench/stats"
)

// The latency workload: every node behind a proxy that delays each reply
// by proxyDelay; the hand-off is that of latencyClients Clients holding for
// latencyHold.
const (
	proxyDelay     = time.Millisecond
	latencyClients = 4
	latencyHold    = 20 * time.Millisecond
)

// startProxies puts a toxiproxy in front of each of upstreams, adding
// proxyDelay to every reply, and returns their addresses and how to stop
// them.
func startProxies(upstreams []string) (addrs []string, stop func(), err error) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
	var ps []*toxiproxy.Proxy
	stop = func() {
		for _, p := range ps {
			p.Stop()
		}
	}
	for i, up := range upstreams {
		p := toxiproxy.NewProxy(srv, fmt.Sprintf("node%d", i), "127.0.0.1:0", up)
		if err := p.Start(); err != nil {
			stop()
			return nil, nil, err
		}
		ps = append(ps, p)
		toxic := fmt.Sprintf(`{"type":"latency","stream":"downstream","attributes":{"latency":%d}}`, proxyDelay.Milliseconds())
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
			stop()
			return nil, nil, err
		}
		addrs = append(addrs, p.Listen)
	}
	return addrs, stop, nil
}

// latencyLibrary says whether lib runs in the latency workload: this
// library with one driver, and the peers that lock on several nodes.
func latencyLibrary(lib library) bool {
	return lib.quorum && (!lib.ours() || strings.HasPrefix(lib.id, "redlock-goredis-"))
}

// latencyOf runs, through the proxies, the uncontended cycle and the
// contention of lib on one node and on three, and the idle PING through
// one proxy: a run per cell, by cellKey.
func latencyOf(ctx context.Context, lib library, proxied []string, admins []*redis.Client, d time.Duration) (*run, error) {
	r := &run{cells: make(map[string]*run)}
	ping, err := pings(ctx, proxied[0])
	if err != nil {
		return nil, err
	}
	r.cells["ping"] = ping
	for _, nodes := range []int{1, 3} {
		c, err := cycle(ctx, lib, proxied[:nodes], admins[:nodes], d)
		if err != nil {
			return nil, fmt.Errorf("cycle on %d nodes: %w", nodes, err)
		}
		r.cells[cellKey("cycle", nodes)] = c
		time.Sleep(200 * time.Millisecond) // the server settles
		c, err = contend(ctx, lib, proxied[:nodes], admins[:nodes], latencyClients, latencyHold, d)
		if err != nil {
			return nil, fmt.Errorf("contention on %d nodes: %w", nodes, err)
		}
		r.cells[cellKey("contend", nodes)] = c
		time.Sleep(200 * time.Millisecond)
	}
	return r, nil
}

// pings are 20 PINGs through addr, each after 20ms idle.
func pings(ctx context.Context, addr string) (*run, error) {
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	r := new(run)
	for range 20 {
		holdFor(20 * time.Millisecond)
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return nil, err
		}
		r.latency = append(r.latency, time.Since(start))
	}
	return r, nil
}

// printLatency prints the latency table: each figure on one node, on
// three, and three's over one's.
func printLatency(w io.Writer, libs []library, runs [][]*run) {
	fmt.Fprintf(w, "### Per-node latency: each node behind a proxy adding %v to every reply; one node and three\n\n", proxyDelay)
	fmt.Fprintf(w, "The cycle is an uncontended lock and unlock; the hand-off, with %d Clients and a %v hold, is a release's start to the next holder's return.\n\n", latencyClients, latencyHold)
	fmt.Fprintln(w, "| library | idle PING via the proxy | one node: cycle p50 | three nodes | three ÷ one | one node: hand-off p50 | three nodes | three ÷ one |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	p50 := func(of func(*run) []time.Duration) func(*run) float64 {
		return func(c *run) float64 {
			if c == nil {
				return math.NaN()
			}
			return us(stats.Percentile(of(c), 50))
		}
	}
	latencyP50 := p50(func(c *run) []time.Duration { return c.latency })
	handoffP50 := p50(func(c *run) []time.Duration { return c.handoff })
	for i, lib := range libs {
		var ping, c1, c3, cr, h1, h3, hr []float64
		for _, r := range runs[i] {
			ping = appendNum(ping, latencyP50(r.cells["ping"]))
			one, three := latencyP50(r.cells[cellKey("cycle", 1)]), latencyP50(r.cells[cellKey("cycle", 3)])
			c1, c3, cr = appendNum(c1, one), appendNum(c3, three), appendNum(cr, three/one)
			one, three = handoffP50(r.cells[cellKey("contend", 1)]), handoffP50(r.cells[cellKey("contend", 3)])
			h1, h3, hr = appendNum(h1, one), appendNum(h3, three), appendNum(hr, three/one)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", lib.name, spread(ping, fmtUs),
			spread(c1, fmtUs), spread(c3, fmtUs), spread(cr, num(2)), spread(h1, fmtUs), spread(h3, fmtUs), spread(hr, num(2)))
	}
	fmt.Fprintln(w)
}

// appendNum appends x to xs unless it is NaN, a figure not measured.
func appendNum(xs []float64, x float64) []float64 {
	if math.IsNaN(x) {
		return xs
	}
	return append(xs, x)
}
