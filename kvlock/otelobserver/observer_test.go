package otelobserver_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/kvlock/otelobserver"
	"github.com/natscoord/natscoord/opstats"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

func setup(t *testing.T) (*otelobserver.Observer, *sdkmetric.ManualReader, *tracetest.SpanRecorder) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() {
		require.NoError(t, mp.Shutdown(context.Background()))
		require.NoError(t, tp.Shutdown(context.Background()))
	})
	o, err := otelobserver.New(mp, tp)
	require.NoError(t, err)
	return o, reader, rec
}

func histogramCount(t *testing.T, r *sdkmetric.ManualReader) map[string]uint64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, r.Collect(context.Background(), &rm))
	out := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok {
				for _, dp := range h.DataPoints {
					op, _ := dp.Attributes.Value("kvlock.op")
					out[op.AsString()] += dp.Count
				}
			}
		}
	}
	return out
}

func TestRecordsLockerOperations(t *testing.T) {
	o, reader, rec := setup(t)
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	l, err := kvlock.New(ctx, n.JS, kvlock.Config{Name: "otel", TTL: 3 * time.Second, RenewInterval: time.Second, Observer: o})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close(context.Background())) })

	lk, err := l.Acquire(ctx, "k")
	require.NoError(t, err)
	require.NoError(t, lk.Renew(ctx))
	require.NoError(t, lk.Release(ctx))

	counts := histogramCount(t, reader)
	require.EqualValues(t, 1, counts["acquire"])
	require.EqualValues(t, 1, counts["renew"])
	require.EqualValues(t, 1, counts["release"])

	names := map[string]bool{}
	for _, s := range rec.Ended() {
		names[s.Name()] = true
		require.False(t, s.StartTime().After(s.EndTime()))
	}
	require.True(t, names["kvlock.acquire"] && names["kvlock.renew"] && names["kvlock.release"], "%v", names)
}

func TestLostIsAnErrorSpanAndCounted(t *testing.T) {
	o, reader, rec := setup(t)
	o.OnLost(context.Background(), kvlock.Event{
		Op: kvlock.OpLost, Name: "n", Key: "k", Token: 7, Duration: time.Second,
		Err: errors.Join(kvlock.ErrLost, errors.New("force released")),
	})
	spans := rec.Ended()
	require.Len(t, spans, 1)
	require.Equal(t, codes.Error, spans[0].Status().Code)
	require.InDelta(t, time.Second, spans[0].EndTime().Sub(spans[0].StartTime()), float64(50*time.Millisecond))

	var rm metricdata.ResourceMetrics
	require.NoError(t, reader.Collect(context.Background(), &rm))
	found := false
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "kvlock.lost" {
				found = true
				sum := m.Data.(metricdata.Sum[int64])
				require.EqualValues(t, 1, sum.DataPoints[0].Value)
			}
		}
	}
	require.True(t, found)
}

func TestNilProvidersDisableSignals(t *testing.T) {
	o, err := otelobserver.New(nil, nil)
	require.NoError(t, err)
	o.OnAcquire(context.Background(), kvlock.Event{Op: kvlock.OpAcquire})
	o.OnLost(context.Background(), kvlock.Event{Op: kvlock.OpLost, Err: kvlock.ErrLost})
}

// The adapter labels outcomes as kvlock classifies them (Event.Outcome),
// the same values as kvlock.RecorderObserver's outcome label: a
// contended TryAcquire is "contended", a cancelled call "timeout".
func TestOutcomeIsKvlocks(t *testing.T) {
	o, _, spans := setup(t)
	r := opstats.New()
	both := kvlock.Observers(o, kvlock.RecorderObserver(r))
	ctx := context.Background()
	for _, e := range []kvlock.Event{
		{Op: kvlock.OpAcquire, Name: "n", Key: "contended"},
		{Op: kvlock.OpAcquire, Name: "n", Key: "cancelled", Err: context.Canceled},
		{Op: kvlock.OpAcquire, Name: "n", Key: "open", Err: kvlock.ErrCircuitOpen},
		{Op: kvlock.OpRelease, Name: "n", Key: "ok"},
	} {
		both.OnAcquire(ctx, e)
	}
	got := map[string]string{}
	for _, s := range spans.Ended() {
		var key, outcome string
		for _, a := range s.Attributes() {
			switch a.Key {
			case "kvlock.key":
				key = a.Value.AsString()
			case "kvlock.outcome":
				outcome = a.Value.AsString()
			}
		}
		got[key] = outcome
	}
	require.Equal(t, map[string]string{"contended": "contended", "cancelled": "timeout", "open": "circuit_open", "ok": "ok"}, got)
	for _, out := range []string{"contended", "timeout", "circuit_open"} {
		require.EqualValues(t, 1, r.Count(opstats.Labels{Component: "kvlock", Name: "n", Op: "acquire", Outcome: out}), out)
	}
}
