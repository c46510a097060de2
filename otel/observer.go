// Package redlockotel records a redlock Client's leases as OpenTelemetry
// metrics and spans: pass NewObserver's Observer to core.WithObserver.
//
// Metrics (attributes: redlock.primitive, redlock.strategy, and
// redlock.name only with WithLockNames, whose values are as many as the
// names):
//
//   - redlock.acquire.duration (s, histogram): from an acquisition call to
//     its return, with redlock.result and redlock.wait (false for a Try).
//   - redlock.acquisitions ({acquisition}, counter): acquisition calls, by
//     redlock.result: acquired, not_acquired, timeout, canceled,
//     unavailable (too few nodes answered), error.
//   - redlock.lease.held (s, histogram): from a lease's start to its
//     release or its loss, with redlock.result: released or lost.
//   - redlock.leases.lost ({lease}, counter): leases lost before their
//     release.
//   - redlock.extensions ({extension}, counter): Extend calls, the
//     watchdog's included, by redlock.result: extended, lost, error.
//
// Spans: one per waiting acquisition (Lock, RLock, Acquire), named
// "redlock.acquire", from the call to its return, a child of the call's
// context, with the attributes of its metrics and redlock.attempts.
package redlockotel

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlockgo/redlock/core"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/redlockgo/redlock/otel"

// Option configures NewObserver.
type Option func(*config)

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	names   bool
}

// WithMeterProvider sets where the metrics go (default: otel's global
// MeterProvider).
func WithMeterProvider(p metric.MeterProvider) Option { return func(c *config) { c.meters = p } }

// WithTracerProvider sets where the spans go (default: otel's global
// TracerProvider).
func WithTracerProvider(p trace.TracerProvider) Option { return func(c *config) { c.tracers = p } }

// WithLockNames adds the attribute redlock.name to metrics and spans. Each
// name makes series of its own: use it when the names are few.
func WithLockNames() Option { return func(c *config) { c.names = true } }

// Observer is a core.Observer that records metrics and spans.
type Observer struct {
	names      bool
	tracer     trace.Tracer
	wait, held metric.Float64Histogram
	acquired   metric.Int64Counter
	lost       metric.Int64Counter
	extended   metric.Int64Counter
}

var _ core.Observer = (*Observer)(nil)

// NewObserver creates the instruments; it fails only when the
// MeterProvider refuses one.
func NewObserver(opts ...Option) (*Observer, error) {
	c := config{meters: otel.GetMeterProvider(), tracers: otel.GetTracerProvider()}
	for _, opt := range opts {
		opt(&c)
	}
	m := c.meters.Meter(ScopeName)
	o := &Observer{names: c.names, tracer: c.tracers.Tracer(ScopeName)}
	var errs [5]error
	o.wait, errs[0] = m.Float64Histogram("redlock.acquire.duration", metric.WithUnit("s"),
		metric.WithDescription("From an acquisition call to its return."))
	o.held, errs[1] = m.Float64Histogram("redlock.lease.held", metric.WithUnit("s"),
		metric.WithDescription("From a lease's start to its release or loss."))
	o.acquired, errs[2] = m.Int64Counter("redlock.acquisitions", metric.WithUnit("{acquisition}"),
		metric.WithDescription("Acquisition calls, by result."))
	o.lost, errs[3] = m.Int64Counter("redlock.leases.lost", metric.WithUnit("{lease}"),
		metric.WithDescription("Leases lost before their release."))
	o.extended, errs[4] = m.Int64Counter("redlock.extensions", metric.WithUnit("{extension}"),
		metric.WithDescription("Extend calls, the watchdog's included, by result."))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	return o, nil
}

// attrs are an event's attributes, and result's.
func (o *Observer) attrs(e core.Event, result string, more ...attribute.KeyValue) []attribute.KeyValue {
	kv := append(make([]attribute.KeyValue, 0, 4+len(more)),
		attribute.String("redlock.primitive", e.Primitive),
		attribute.String("redlock.strategy", e.Strategy.String()))
	if o.names {
		kv = append(kv, attribute.String("redlock.name", e.Name))
	}
	if result != "" {
		kv = append(kv, attribute.String("redlock.result", result))
	}
	return append(kv, more...)
}

// Acquired records an acquisition, and a span for a waiting one.
func (o *Observer) Acquired(e core.AcquireEvent) {
	ctx := e.Context
	if ctx == nil {
		ctx = context.Background()
	}
	ctx = context.WithoutCancel(ctx)
	result := acquireResult(e.Err)
	set := metric.WithAttributes(o.attrs(e.Event, result, attribute.Bool("redlock.wait", e.Waited))...)
	o.wait.Record(ctx, e.Wait.Seconds(), set)
	o.acquired.Add(ctx, 1, metric.WithAttributes(o.attrs(e.Event, result)...))
	if !e.Waited {
		return
	}
	end := time.Now()
	_, span := o.tracer.Start(ctx, "redlock.acquire", trace.WithTimestamp(end.Add(-e.Wait)),
		trace.WithAttributes(o.attrs(e.Event, result, attribute.Int("redlock.attempts", e.Attempts))...))
	if e.Err != nil {
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
}

// Released records how long a lease was held, unless Lost did.
func (o *Observer) Released(e core.ReleaseEvent) {
	if errors.Is(e.Err, core.ErrLost) {
		return
	}
	o.held.Record(context.Background(), e.Held.Seconds(), metric.WithAttributes(o.attrs(e.Event, "released")...))
}

// Extended counts an extension by result.
func (o *Observer) Extended(e core.ExtendEvent) {
	result := "extended"
	switch {
	case errors.Is(e.Err, core.ErrLost):
		result = "lost"
	case e.Err != nil:
		result = "error"
	}
	o.extended.Add(context.Background(), 1, metric.WithAttributes(o.attrs(e.Event, result)...))
}

// Lost counts a loss and records how long the lease was held.
func (o *Observer) Lost(e core.LostEvent) {
	ctx := context.Background()
	o.lost.Add(ctx, 1, metric.WithAttributes(o.attrs(e.Event, "")...))
	o.held.Record(ctx, e.Held.Seconds(), metric.WithAttributes(o.attrs(e.Event, "lost")...))
}

// acquireResult names an acquisition's outcome.
func acquireResult(err error) string {
	switch {
	case err == nil:
		return "acquired"
	case errors.Is(err, core.ErrNotAcquired):
		return "not_acquired"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, core.ErrNoQuorum), errors.Is(err, core.ErrUnavailable), errors.Is(err, core.ErrReplicasBehind):
		return "unavailable"
	}
	return "error"
}
