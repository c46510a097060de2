package redlockotel_test

import (
	"context"
	"fmt"
	"log"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
	redlockotel "github.com/redlockgo/redlock/otel"
)

// A Client whose Observer records OpenTelemetry metrics: here into a
// manual reader, printed after one Lock and Unlock. In a service, pass a
// MeterProvider with an exporter (or none: the global one).
func Example() {
	server := miniredis.NewMiniRedis() // a Redis server in process, for the example
	if err := server.Start(); err != nil {
		log.Fatal(err)
	}
	defer server.Close()
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	defer rdb.Close()
	d, err := goredis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}

	reader := sdkmetric.NewManualReader()
	meters := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	observer, err := redlockotel.NewObserver(redlockotel.WithMeterProvider(meters))
	if err != nil {
		log.Fatal(err)
	}
	c, err := core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll), core.WithObserver(observer))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	lease, err := c.Mutex("payouts").Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	if err := lease.Unlock(ctx); err != nil {
		log.Fatal(err)
	}

	var got metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &got); err != nil {
		log.Fatal(err)
	}
	for _, line := range points(got) {
		fmt.Println(line)
	}
	// Output:
	// redlock.acquire.duration (s) {redlock.primitive=Mutex,redlock.result=acquired,redlock.strategy=Poll,redlock.wait=true}: 1 recorded
	// redlock.acquisitions ({acquisition}) {redlock.primitive=Mutex,redlock.result=acquired,redlock.strategy=Poll}: 1
	// redlock.lease.held (s) {redlock.primitive=Mutex,redlock.result=released,redlock.strategy=Poll}: 1 recorded
}
