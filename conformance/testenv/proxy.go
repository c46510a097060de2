package testenv

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Proxy puts a toxiproxy in front of upstream, adding latencyMS of delay to
// every reply when it is positive, and returns its address and a function
// that takes it down, closing every connection through it: the node then
// looks down to clients that connected while it was up.
func Proxy(t testing.TB, upstream string, latencyMS int) (addr string, down func()) {
	t.Helper()
	p := start(t, upstream)
	if latencyMS > 0 {
		addToxic(t, p, fmt.Sprintf(`{"type":"latency","stream":"downstream","attributes":{"latency":%d}}`, latencyMS))
	}
	return p.Listen, p.Stop
}

// LossyProxy puts a toxiproxy in front of upstream and returns its address
// and loseReplies: from its call on, every reply through the proxy is
// dropped and each connection is closed closeAfter later, until heal, which
// it returns, is called. A request sent in that time runs on the server,
// and its client sees the connection break (io.EOF) without a reply.
func LossyProxy(t testing.TB, upstream string) (addr string, loseReplies func(closeAfter time.Duration) (heal func())) {
	t.Helper()
	p := start(t, upstream)
	return p.Listen, func(closeAfter time.Duration) func() {
		toxic := fmt.Sprintf(`{"name":"lose","type":"timeout","stream":"downstream","attributes":{"timeout":%d}}`, closeAfter.Milliseconds())
		addToxic(t, p, toxic)
		return func() {
			if err := p.Toxics.RemoveToxic(context.Background(), "lose"); err != nil {
				t.Error(err)
			}
		}
	}
}

func start(t testing.TB, upstream string) *toxiproxy.Proxy {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(srv, t.Name(), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

func addToxic(t testing.TB, p *toxiproxy.Proxy, toxic string) {
	if _, err := p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
		t.Fatal(err)
	}
}
