// Package otelobserver reports kvlock operations to OpenTelemetry: one
// duration histogram and one span per finished acquire, renew, release and
// loss.
//
// It is a module of its own so that kvlock, and every program that uses
// kvlock without OpenTelemetry, does not depend on the OTel SDK.
//
//	obs, err := otelobserver.New(otel.GetMeterProvider(), otel.GetTracerProvider())
//	locker, err := kvlock.New(ctx, js, kvlock.Config{Name: "jobs", Observer: obs})
package otelobserver

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/natscoord/natscoord/kvlock"
)

// ScopeName is the instrumentation scope of the meter and tracer.
const ScopeName = "github.com/natscoord/natscoord/kvlock"

// Observer implements kvlock.Observer on an OTel meter and tracer.
type Observer struct {
	duration metric.Float64Histogram
	lost     metric.Int64Counter
	tracer   trace.Tracer
	// Keys controls whether lock keys become attributes. Default false:
	// keys are often unbounded (one per conversation, per job), which makes
	// metric cardinality explode; spans carry the key either way.
	Keys bool
}

var _ kvlock.Observer = (*Observer)(nil)

// New creates the instruments. Either provider may be nil, which disables
// that signal.
func New(mp metric.MeterProvider, tp trace.TracerProvider) (*Observer, error) {
	o := &Observer{}
	if mp != nil {
		m := mp.Meter(ScopeName)
		var err error
		o.duration, err = m.Float64Histogram("kvlock.operation.duration",
			metric.WithUnit("s"),
			metric.WithDescription("Duration of kvlock operations, waiting included; for lost, how long the lock had been held."))
		if err != nil {
			return nil, fmt.Errorf("otelobserver: %w", err)
		}
		o.lost, err = m.Int64Counter("kvlock.lost",
			metric.WithDescription("Locks whose ownership could no longer be confirmed."))
		if err != nil {
			return nil, fmt.Errorf("otelobserver: %w", err)
		}
	}
	if tp != nil {
		o.tracer = tp.Tracer(ScopeName)
	}
	return o, nil
}

// OnAcquire records an acquisition attempt.
func (o *Observer) OnAcquire(ctx context.Context, e kvlock.Event) { o.record(ctx, e) }

// OnRenew records a renewal.
func (o *Observer) OnRenew(ctx context.Context, e kvlock.Event) { o.record(ctx, e) }

// OnRelease records a release.
func (o *Observer) OnRelease(ctx context.Context, e kvlock.Event) { o.record(ctx, e) }

// OnLost records a loss of ownership.
func (o *Observer) OnLost(ctx context.Context, e kvlock.Event) {
	if o.lost != nil {
		o.lost.Add(ctx, 1, metric.WithAttributes(attribute.String("kvlock.name", e.Name)))
	}
	o.record(ctx, e)
}

func (o *Observer) record(ctx context.Context, e kvlock.Event) {
	attrs := []attribute.KeyValue{
		attribute.String("kvlock.op", string(e.Op)),
		attribute.String("kvlock.name", e.Name),
		attribute.Bool("kvlock.acquired", e.Acquired),
		attribute.Bool("kvlock.fair", e.Fair),
		attribute.String("kvlock.outcome", e.Outcome()),
	}
	if o.duration != nil {
		ma := attrs
		if o.Keys {
			ma = append(ma, attribute.String("kvlock.key", e.Key))
		}
		o.duration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(ma...))
	}
	if o.tracer == nil {
		return
	}
	// Hooks run after the fact: backdate the span to the operation's start.
	end := time.Now()
	_, span := o.tracer.Start(ctx, "kvlock."+string(e.Op),
		trace.WithTimestamp(end.Add(-e.Duration)),
		trace.WithAttributes(append(attrs,
			attribute.String("kvlock.key", e.Key),
			attribute.Int64("kvlock.token", int64(e.Token)))...))
	if e.Err != nil {
		span.RecordError(e.Err)
		span.SetStatus(codes.Error, e.Err.Error())
	}
	span.End(trace.WithTimestamp(end))
}
