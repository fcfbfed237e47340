package otelworker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/kvledger/worker/otelworker"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func setup(t *testing.T) (*otelworker.Observer, *sdkmetric.ManualReader, *tracetest.SpanRecorder, trace.TracerProvider) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() {
		require.NoError(t, mp.Shutdown(context.Background()))
		require.NoError(t, tp.Shutdown(context.Background()))
	})
	o, err := otelworker.New(mp, tp)
	require.NoError(t, err)
	return o, reader, rec, tp
}

// histogramCounts returns, per histogram name and attribute set, how
// many values were recorded.
func histogramCounts(t *testing.T, r *sdkmetric.ManualReader) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, dp := range h.DataPoints {
					kind, _ := dp.Attributes.Value("kvledger.task.kind")
					result, _ := dp.Attributes.Value("kvledger.task.result")
					_, hasKey := dp.Attributes.Value("kvledger.task.key")
					require.False(t, hasKey, "a task key is never a metric attribute")
					out[fmt.Sprintf("%s %s %s", m.Name, kind.AsString(), result.AsString())] += dp.Count
				}
			}
		}
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	out := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		out[kv.Key] = kv.Value
	}
	return out
}

// A worker with the Observer gives each attempt one span, from its
// handler's start to its recorded outcome, with its kind, attempt, fence
// and result, an error status when it failed; spans the handler starts
// from Context are its children.
func TestSpanPerAttempt(t *testing.T) {
	o, reader, rec, tp := setup(t)
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store, err := kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: "otelworker"})
	require.NoError(t, err)
	led, err := kvledger.New(store)
	require.NoError(t, err)
	w, err := worker.New(ctx, n.JS, led, worker.Config{Observer: o, MaxAttempts: 3, LeaseBucket: "otelworker_claims",
		BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
		_, child := tp.Tracer("handler").Start(o.Context(ctx, task), "handler.step")
		child.End()
		if task.Attempt() == 1 {
			return errors.New("first try fails")
		}
		return nil
	}))
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, w.Close(cctx))
	})
	ok, err := led.Submit(ctx, "test", kvledger.Submission{Key: "k", Kind: "job"})
	require.NoError(t, err)
	require.True(t, ok)
	_, err = led.WaitFinal(ctx, "k")
	require.NoError(t, err)
	var attempts, steps []sdktrace.ReadOnlySpan
	natstest.Eventually(t, 10*time.Second, func() bool {
		attempts, steps = nil, nil
		for _, s := range rec.Ended() {
			switch s.Name() {
			case otelworker.SpanName:
				attempts = append(attempts, s)
			case "handler.step":
				steps = append(steps, s)
			}
		}
		return len(attempts) == 2
	}, "both attempts' spans ended")
	require.Len(t, steps, 2)
	first, second := attrs(attempts[0]), attrs(attempts[1])
	require.Equal(t, "k", first["kvledger.task.key"].AsString())
	require.Equal(t, "job", first["kvledger.task.kind"].AsString())
	require.EqualValues(t, 1, first["kvledger.task.attempt"].AsInt64())
	require.Equal(t, "retried", first["kvledger.task.result"].AsString())
	require.Equal(t, codes.Error, attempts[0].Status().Code)
	require.Contains(t, attempts[0].Status().Description, "first try fails")
	require.EqualValues(t, 2, second["kvledger.task.attempt"].AsInt64())
	require.Equal(t, "completed", second["kvledger.task.result"].AsString())
	require.Equal(t, codes.Ok, attempts[1].Status().Code)
	require.Greater(t, second["kvledger.task.fence"].AsInt64(), first["kvledger.task.fence"].AsInt64())
	for i := range attempts {
		require.False(t, attempts[i].StartTime().After(attempts[i].EndTime()))
		require.Equal(t, attempts[i].SpanContext().SpanID(), steps[i].Parent().SpanID(), "the handler's span is the attempt's child")
	}

	counts := histogramCounts(t, reader)
	require.EqualValues(t, 1, counts["kvledger.worker.attempt.duration job retried"], "%v", counts)
	require.EqualValues(t, 1, counts["kvledger.worker.attempt.duration job completed"], "%v", counts)
	require.EqualValues(t, 2, counts["kvledger.worker.pickup.latency job "], "%v", counts)
}

// An attempt that finishes without having started (its task failed at
// the claim) gets a span of its own, backdated by its duration; a
// started one ends the span its start began.
func TestFinishWithoutStart(t *testing.T) {
	o, _, rec, _ := setup(t)
	o.OnFinish(context.Background(), worker.Event{Key: "k", Kind: "job", Fence: 3, Attempt: 3,
		Result: worker.ResultFailed, Err: kvledger.ErrAttemptsExhausted, Duration: time.Second})
	spans := rec.Ended()
	require.Len(t, spans, 1)
	require.Equal(t, codes.Error, spans[0].Status().Code)
	require.Equal(t, "failed", attrs(spans[0])["kvledger.task.result"].AsString())
	require.InDelta(t, time.Second, spans[0].EndTime().Sub(spans[0].StartTime()), float64(50*time.Millisecond))

	o.OnStart(context.Background(), worker.Event{Key: "k", Kind: "job", Fence: 4, Attempt: 1})
	o.OnFinish(context.Background(), worker.Event{Key: "k", Kind: "job", Fence: 4, Attempt: 1, Result: worker.ResultReleased, Err: worker.ErrDraining})
	spans = rec.Ended()
	require.Len(t, spans, 2, "the started attempt's span ended, no second one")
	require.Equal(t, codes.Ok, spans[1].Status().Code, "a drain's give-back is no failure")
}

func TestNilProvidersDisableSignals(t *testing.T) {
	o, err := otelworker.New(nil, nil)
	require.NoError(t, err)
	o.OnStart(context.Background(), worker.Event{Key: "k", Due: time.Now()})
	o.OnFinish(context.Background(), worker.Event{Key: "k", Result: worker.ResultLost})
}
