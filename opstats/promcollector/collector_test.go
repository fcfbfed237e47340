package promcollector_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/opstats"
	"github.com/natscoord/natscoord/opstats/promcollector"
)

func TestMain(m *testing.M) { natstest.VerifyTestMain(m) }

// register returns a fresh registry holding a Collector of sources.
func register(t *testing.T, sources ...func() []opstats.Family) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(promcollector.New(sources...)))
	return reg
}

// requireSameAsText asserts that reg gathers exactly the series, values,
// help and types that opstats.WriteText writes for the families of
// sources, read now, and that they pass client_golang's lint.
func requireSameAsText(t *testing.T, reg *prometheus.Registry, sources ...func() []opstats.Family) {
	t.Helper()
	var fams []opstats.Family
	for _, s := range sources {
		fams = append(fams, s()...)
	}
	var text bytes.Buffer
	require.NoError(t, opstats.WriteText(&text, fams...))
	require.NoError(t, testutil.GatherAndCompare(reg, &text), "the registry gathers what /metrics writes:\n%s", text.String())
	problems, err := testutil.GatherAndLint(reg)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// A locker's operations, recorded by kvlock.RecorderObserver, gather
// from a registry as the same series, values and histogram buckets as
// the Recorder's text, read at scrape time: registered before any
// operation, the collector sees what came after.
func TestLockerSeriesSameAsText(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	rec := opstats.New()
	reg := register(t, rec.Families)
	require.Zero(t, testutil.CollectAndCount(promcollector.New(rec.Families)), "no operation yet, no series")

	l, err := kvlock.New(ctx, n.JS, kvlock.Config{Name: "prom", TTL: 5 * time.Second, Observer: kvlock.RecorderObserver(rec)})
	require.NoError(t, err)
	lk, err := l.Acquire(ctx, "orders.42")
	require.NoError(t, err)
	_, ok, err := l.TryAcquire(ctx, "orders.42")
	require.NoError(t, err)
	require.False(t, ok, "held: contended")
	require.NoError(t, lk.Renew(ctx))
	require.NoError(t, lk.Release(ctx))
	require.NoError(t, l.Close(ctx))

	requireSameAsText(t, reg, rec.Families)
	acquired := opstats.Labels{Component: "kvlock", Name: "prom", Op: "acquire", Outcome: "ok"}
	require.EqualValues(t, 1, rec.Count(acquired))
	require.Equal(t, 1.0, testutil.ToFloat64(single(t, rec, acquired)))
}

// single is a collector of the one natscoord_operations_total series of
// l, for testutil.ToFloat64.
func single(t *testing.T, rec *opstats.Recorder, l opstats.Labels) prometheus.Collector {
	t.Helper()
	return promcollector.New(func() []opstats.Family {
		ops := rec.Families()[0]
		require.Equal(t, "natscoord_operations_total", ops.Name)
		for _, s := range ops.Samples {
			if s.Labels[0].Value == l.Component && s.Labels[1].Value == l.Name && s.Labels[2].Value == l.Op && s.Labels[3].Value == l.Outcome {
				ops.Samples = []opstats.Sample{s}
				return []opstats.Family{ops}
			}
		}
		t.Fatalf("no series %+v", l)
		return nil
	})
}

// A worker's series, the ones `natscoord work --metrics-listen` serves
// (its RecorderObserver's attempts and pickup latency, and its Stats),
// gather from a registry as /metrics writes them.
func TestWorkerSeriesSameAsText(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	store, err := kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: "promworker"})
	require.NoError(t, err)
	led, err := kvledger.New(store)
	require.NoError(t, err)
	rec := opstats.New()
	w, err := worker.New(ctx, n.JS, led, worker.Config{Observer: worker.RecorderObserver(rec), MaxAttempts: 2,
		LeaseBucket: "promworker_claims", BackoffBase: 10 * time.Millisecond, BackoffMax: 20 * time.Millisecond})
	require.NoError(t, err)
	stats := func() []opstats.Family { return w.Stats().Families() }
	reg := register(t, rec.Families, stats)
	require.NoError(t, w.Handle("job", func(_ context.Context, task *worker.Task) error {
		if task.Key() == "bad" {
			return errors.New("always fails")
		}
		return nil
	}))
	require.NoError(t, w.Start(ctx))
	closed := false
	t.Cleanup(func() {
		if !closed {
			require.NoError(t, w.Close(context.Background()))
		}
	})
	for _, k := range []kvledger.IdempotencyKey{"good", "bad"} {
		ok, err := led.Submit(ctx, "test", kvledger.Submission{Key: k, Kind: "job"})
		require.NoError(t, err)
		require.True(t, ok)
	}
	for _, k := range []kvledger.IdempotencyKey{"good", "bad"} {
		_, err := led.WaitFinal(ctx, k)
		require.NoError(t, err)
	}
	require.NoError(t, w.Close(ctx))
	closed = true

	requireSameAsText(t, reg, rec.Families, stats)
	s := w.Stats()
	require.EqualValues(t, 1, s.Completed)
	require.EqualValues(t, 1, s.Failed)
	require.EqualValues(t, 1, s.Retried)
	require.EqualValues(t, 3, testutil.ToFloat64(promcollector.New(func() []opstats.Family {
		return w.Stats().Families()[2:3] // natscoord_worker_attempts_started_total
	})))
}

// Counters with labels whose values need escaping in the text format,
// gauges, and a CounterVec without labels gather as WriteText writes
// them; a source's later values are what the next scrape reads.
func TestFamiliesReadAtScrape(t *testing.T) {
	events := opstats.NewCounterVec("natscoord_test_events_total", "Events, by name.\nSecond line \\ here.", "event")
	plain := opstats.NewCounterVec("natscoord_test_plain_total", "A counter without labels.")
	var level float64
	gauges := func() []opstats.Family {
		return []opstats.Family{{Name: "natscoord_test_level", Help: "A level.", Kind: opstats.Gauge,
			Samples: []opstats.Sample{{Labels: []opstats.Label{{Name: "bucket", Value: "a"}}, Value: level}}}}
	}
	sources := []func() []opstats.Family{
		func() []opstats.Family { return []opstats.Family{events.Family(), plain.Family()} }, gauges,
	}
	reg := register(t, sources...)
	requireSameAsText(t, reg, sources...)

	events.Inc(`say "hi"`)
	events.Add(3, "back\\slash\nnewline")
	plain.Inc()
	level = 2.5
	requireSameAsText(t, reg, sources...)
	require.Equal(t, 2.5, testutil.ToFloat64(promcollector.New(gauges)))
}

// A label value client_golang refuses (not UTF-8) is reported by Gather
// as an error, without a panic, and the other series are still gathered.
func TestInvalidLabelValueIsAGatherError(t *testing.T) {
	bad := opstats.NewCounterVec("natscoord_test_bad_total", "Bad.", "name")
	bad.Inc("\xff")
	good := opstats.NewCounterVec("natscoord_test_good_total", "Good.")
	reg := register(t, func() []opstats.Family { return []opstats.Family{bad.Family(), good.Family()} })
	fams, err := reg.Gather()
	require.Error(t, err)
	var names []string
	for _, f := range fams {
		names = append(names, f.GetName())
	}
	require.Equal(t, []string{"natscoord_test_good_total"}, names)
}

// opstats.RuntimeFamilies beside client_golang's Go collector is refused
// at Gather (the same go_* names twice), as the package doc warns.
func TestRuntimeFamiliesClashWithGoCollector(t *testing.T) {
	reg := register(t, opstats.RuntimeFamilies)
	reg.MustRegister(collectors.NewGoCollector())
	_, err := reg.Gather()
	require.ErrorContains(t, err, "go_goroutines")
}
