// Package otelworker reports the attempts of kvledger/worker to
// OpenTelemetry: one span per attempt, from its handler's start to its
// recorded outcome, and histograms of attempt run times and pickup
// latency.
//
// It is a module of its own so that kvledger/worker, and every program
// that uses it without OpenTelemetry, does not depend on the OTel SDK
// (as kvlock/otelobserver is for kvlock).
//
//	obs, err := otelworker.New(otel.GetMeterProvider(), otel.GetTracerProvider())
//	w, err := worker.New(ctx, js, ledger, worker.Config{Observer: obs})
//	_ = w.Handle("resize", func(ctx context.Context, t *worker.Task) error {
//		ctx = obs.Context(ctx, t) // the handler's spans become children of the attempt's
//		...
//	})
//
// The worker's Observer is told of an attempt but cannot change its
// handler's context, hence Context. Metrics carry the task's kind and
// result only (a kind per handler: few); spans carry its key too.
package otelworker

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// ScopeName is the instrumentation scope of the meter and tracer.
const ScopeName = "github.com/natscoord/natscoord/kvledger/worker"

// SpanName is the name of every attempt's span.
const SpanName = "kvledger.worker.attempt"

// Observer implements worker.Observer on an OTel meter and tracer. It is
// safe for concurrent use.
type Observer struct {
	duration metric.Float64Histogram
	pickup   metric.Float64Histogram
	tracer   trace.Tracer

	mu    sync.Mutex
	spans map[attempt]trace.Span // started, not yet finished
}

// attempt names one attempt: a claim's fence is new on every claim of a
// key.
type attempt struct {
	key   kvledger.IdempotencyKey
	fence kvledger.FenceToken
}

var _ worker.Observer = (*Observer)(nil)

// New creates the instruments. Either provider may be nil, which disables
// that signal.
func New(mp metric.MeterProvider, tp trace.TracerProvider) (*Observer, error) {
	o := &Observer{spans: make(map[attempt]trace.Span)}
	if mp != nil {
		m := mp.Meter(ScopeName)
		var err error
		o.duration, err = m.Float64Histogram("kvledger.worker.attempt.duration",
			metric.WithUnit("s"),
			metric.WithDescription("Run time of task handlers, by kind and result (0 for a task failed at its claim)."))
		if err != nil {
			return nil, fmt.Errorf("otelworker: %w", err)
		}
		o.pickup, err = m.Float64Histogram("kvledger.worker.pickup.latency",
			metric.WithUnit("s"),
			metric.WithDescription("From when a task became due (its RunAt, else its last write) to the claim that started it, by kind; tasks with needs and takeovers are not measured."))
		if err != nil {
			return nil, fmt.Errorf("otelworker: %w", err)
		}
	}
	if tp != nil {
		o.tracer = tp.Tracer(ScopeName)
	}
	return o, nil
}

// OnStart starts the attempt's span and records its pickup latency.
func (o *Observer) OnStart(ctx context.Context, e worker.Event) {
	if o.pickup != nil && !e.Due.IsZero() {
		o.pickup.Record(ctx, e.Pickup.Seconds(), metric.WithAttributes(attribute.String("kvledger.task.kind", e.Kind)))
	}
	if o.tracer == nil {
		return
	}
	_, span := o.tracer.Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("kvledger.task.key", string(e.Key)),
		attribute.String("kvledger.task.kind", e.Kind),
		attribute.Int("kvledger.task.attempt", e.Attempt),
		attribute.Int64("kvledger.task.fence", int64(e.Fence)),
		attribute.String("kvledger.worker.owner", string(e.Owner)),
	))
	o.mu.Lock()
	o.spans[attempt{e.Key, e.Fence}] = span
	o.mu.Unlock()
}

// OnFinish ends the attempt's span with its result (an error status for
// a failed, retried or lost attempt) and records its run time. An
// attempt that never started (its task failed at the claim; a drain gave
// it back before its handler ran) gets a span of its own, backdated by
// its duration.
func (o *Observer) OnFinish(ctx context.Context, e worker.Event) {
	kind, result := attribute.String("kvledger.task.kind", e.Kind), attribute.String("kvledger.task.result", string(e.Result))
	if o.duration != nil {
		o.duration.Record(ctx, e.Duration.Seconds(), metric.WithAttributes(kind, result))
	}
	if o.tracer == nil {
		return
	}
	o.mu.Lock()
	span, ok := o.spans[attempt{e.Key, e.Fence}]
	delete(o.spans, attempt{e.Key, e.Fence})
	o.mu.Unlock()
	if !ok {
		end := time.Now()
		_, span = o.tracer.Start(ctx, SpanName, trace.WithSpanKind(trace.SpanKindConsumer), trace.WithTimestamp(end.Add(-e.Duration)),
			trace.WithAttributes(
				attribute.String("kvledger.task.key", string(e.Key)), kind,
				attribute.Int("kvledger.task.attempt", e.Attempt),
				attribute.Int64("kvledger.task.fence", int64(e.Fence)),
				attribute.String("kvledger.worker.owner", string(e.Owner)),
			))
	}
	span.SetAttributes(result)
	if !e.RunAt.IsZero() {
		span.SetAttributes(attribute.String("kvledger.task.next_run_at", e.RunAt.UTC().Format(time.RFC3339Nano)))
	}
	switch e.Result {
	case worker.ResultFailed, worker.ResultRetried, worker.ResultLost:
		msg := string(e.Result)
		if e.Err != nil {
			span.RecordError(e.Err)
			msg += ": " + e.Err.Error()
		}
		span.SetStatus(codes.Error, msg)
	default:
		span.SetStatus(codes.Ok, "")
	}
	span.End()
}

// Context returns ctx carrying the span of t's running attempt, so that
// spans the handler starts from it are the attempt's children; ctx as
// it is when the attempt has no span (no tracer, or it finished).
func (o *Observer) Context(ctx context.Context, t *worker.Task) context.Context {
	o.mu.Lock()
	span, ok := o.spans[attempt{t.Key(), t.Fence()}]
	o.mu.Unlock()
	if !ok {
		return ctx
	}
	return trace.ContextWithSpan(ctx, span)
}
