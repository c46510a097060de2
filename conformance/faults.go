package conformance

import (
	"testing"

	"github.com/Shopify/toxiproxy/v2"
	"github.com/Shopify/toxiproxy/v2/collectors"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// proxy puts a toxiproxy in front of upstream and returns its address and
// a function that takes it down, closing every connection through it: the
// node then looks down to clients that connected while it was up.
func proxy(t testing.TB, upstream string) (addr string, down func()) {
	srv := toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())
	srv.Metrics.ProxyMetrics = collectors.NewProxyMetricCollectors()
	p := toxiproxy.NewProxy(srv, t.Name(), "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p.Listen, p.Stop
}

// withDown returns the cell's addresses with the last n behind proxies,
// and a function that takes those n down.
func (e env) withDown(t testing.TB, n int) (addrs []string, down func()) {
	addrs = append([]string(nil), e.addrs...)
	var downs []func()
	for i := len(addrs) - n; i < len(addrs); i++ {
		var d func()
		addrs[i], d = proxy(t, addrs[i])
		downs = append(downs, d)
	}
	return addrs, func() {
		for _, d := range downs {
			d()
		}
	}
}
