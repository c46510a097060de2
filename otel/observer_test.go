package redlockotel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redlockgo/redlock/core"
	"github.com/redlockgo/redlock/drivers/goredis"
	redlockotel "github.com/redlockgo/redlock/otel"
)

// observed is a Client on miniredis whose Observer records into a manual
// reader and a span recorder.
type observed struct {
	c      *core.Client
	server *miniredis.Miniredis
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
}

func newObserved(t *testing.T, opts ...redlockotel.Option) observed {
	t.Helper()
	server := miniredis.RunT(t)
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	d, err := goredis.New(rdb)
	if err != nil {
		t.Fatal(err)
	}
	o := observed{server: server, reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	opts = append(opts, redlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(o.reader))),
		redlockotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(o.spans))))
	observer, err := redlockotel.NewObserver(opts...)
	if err != nil {
		t.Fatal(err)
	}
	o.c, err = core.New([]core.Driver{d}, core.WithWaitStrategy(core.Poll), core.WithObserver(observer),
		core.WithBackoff(core.Backoff{Base: time.Millisecond, Cap: 10 * time.Millisecond, Multiplier: 2}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { o.c.Close() })
	return o
}

func (o observed) points(t *testing.T) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := o.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	return points(rm)
}

// TestEventsBecomeInstruments plays every event on a Mutex and checks the
// instruments and attributes they make.
func TestEventsBecomeInstruments(t *testing.T) {
	o := newObserved(t)
	ctx := context.Background()
	m := o.c.Mutex("payouts")
	held, err := m.TryLock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.TryLock(ctx); !errors.Is(err, core.ErrNotAcquired) {
		t.Fatalf("TryLock of a held lock: %v", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := m.Lock(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lock of a held lock until a deadline: %v", err)
	}
	if err := held.Extend(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := held.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	lost, err := m.Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	o.server.Del("redlock:{payouts}")
	if err := lost.Extend(ctx, time.Minute); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Extend of a deleted lock: %v", err)
	}
	if err := lost.Unlock(ctx); !errors.Is(err, core.ErrLost) {
		t.Fatalf("Unlock of a lost lease: %v", err)
	}

	const attrs = "redlock.primitive=Mutex,"
	want := []string{
		"redlock.acquire.duration (s) {" + attrs + "redlock.result=acquired,redlock.strategy=Poll,redlock.wait=false}: 1 recorded",
		"redlock.acquire.duration (s) {" + attrs + "redlock.result=acquired,redlock.strategy=Poll,redlock.wait=true}: 1 recorded",
		"redlock.acquire.duration (s) {" + attrs + "redlock.result=not_acquired,redlock.strategy=Poll,redlock.wait=false}: 1 recorded",
		"redlock.acquire.duration (s) {" + attrs + "redlock.result=timeout,redlock.strategy=Poll,redlock.wait=true}: 1 recorded",
		"redlock.acquisitions ({acquisition}) {" + attrs + "redlock.result=acquired,redlock.strategy=Poll}: 2",
		"redlock.acquisitions ({acquisition}) {" + attrs + "redlock.result=not_acquired,redlock.strategy=Poll}: 1",
		"redlock.acquisitions ({acquisition}) {" + attrs + "redlock.result=timeout,redlock.strategy=Poll}: 1",
		"redlock.extensions ({extension}) {" + attrs + "redlock.result=extended,redlock.strategy=Poll}: 1",
		"redlock.extensions ({extension}) {" + attrs + "redlock.result=lost,redlock.strategy=Poll}: 1",
		"redlock.lease.held (s) {" + attrs + "redlock.result=lost,redlock.strategy=Poll}: 1 recorded",
		"redlock.lease.held (s) {" + attrs + "redlock.result=released,redlock.strategy=Poll}: 1 recorded",
		"redlock.leases.lost ({lease}) {" + attrs + "redlock.strategy=Poll}: 1",
	}
	// The loss is reported on a goroutine of its own.
	got := o.points(t)
	for deadline := time.Now().Add(2 * time.Second); !slices.Equal(got, want) && time.Now().Before(deadline); got = o.points(t) {
		time.Sleep(10 * time.Millisecond)
	}
	if !slices.Equal(got, want) {
		t.Errorf("points:\n%s\nwant:\n%s", lines(got), lines(want))
	}

	// A span for each waiting acquisition, none for a Try.
	spans := o.spans.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want one per Lock (2)", len(spans))
	}
	for i, want := range []struct {
		result string
		status codes.Code
	}{{"timeout", codes.Error}, {"acquired", codes.Unset}} {
		s := spans[i]
		kv := attribute.NewSet(s.Attributes()...)
		if r, _ := kv.Value("redlock.result"); s.Name() != "redlock.acquire" || r.AsString() != want.result || s.Status().Code != want.status {
			t.Errorf("span %d: %s %v %v, want redlock.acquire with result %s, status %v", i, s.Name(), s.Attributes(), s.Status(), want.result, want.status)
		}
		if a, _ := kv.Value("redlock.attempts"); a.AsInt64() < 1 {
			t.Errorf("span %d: %v attempts", i, a.AsInt64())
		}
	}
	if d := spans[0].EndTime().Sub(spans[0].StartTime()); d < 50*time.Millisecond {
		t.Errorf("the span of a Lock that waited out a 50ms deadline lasts %v", d)
	}
}

// TestSpanParent checks that a waiting acquisition's span is a child of
// the call's context, and that WithLockNames adds the name.
func TestSpanParent(t *testing.T) {
	o := newObserved(t, redlockotel.WithLockNames())
	ctx, parent := sdktrace.NewTracerProvider().Tracer("test").Start(context.Background(), "caller")
	defer parent.End()
	l, err := o.c.Mutex("payouts").Lock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	spans := o.spans.Ended()
	if len(spans) != 1 || spans[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Fatalf("spans %v, want one, a child of %v", spans, parent.SpanContext())
	}
	kv := attribute.NewSet(spans[0].Attributes()...)
	if v, _ := kv.Value("redlock.name"); v.AsString() != "payouts" {
		t.Errorf("span attributes %v, want redlock.name=payouts", spans[0].Attributes())
	}
	for _, p := range o.points(t) {
		if !strings.Contains(p, "redlock.name=payouts") {
			t.Errorf("a point without the name: %s", p)
		}
	}
}

func lines(ss []string) string {
	s := ""
	for _, l := range ss {
		s += "  " + l + "\n"
	}
	return s
}
