package testenv

import (
	"fmt"
	"strings"
	"testing"

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
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(srv, t.Name(), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	if latencyMS > 0 {
		toxic := fmt.Sprintf(`{"type":"latency","stream":"downstream","attributes":{"latency":%d}}`, latencyMS)
		if _, err := p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
			t.Fatal(err)
		}
	}
	return p.Listen, p.Stop
}
