package worker_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// BenchmarkEndToEnd: b.N no-op tasks admitted in one AdmitMany (atomic
// batches), run by one worker with 8 handlers, until all are final.
// Reports tasks/s; the raw-queue baseline and ratios live in
// internal/testsuite/bench.
func BenchmarkEndToEnd(b *testing.B) {
	n := natstest.WithServer(b)
	store := natstest.Open(b, "ledger", func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: fmt.Sprintf("bench%d", seq.Add(1))})
	})
	ctx := natstest.Context(b, 10*time.Minute)
	require.NoError(b, store.EnableAtomicBatches(ctx))
	led, err := kvledger.New(store)
	require.NoError(b, err)
	w, err := worker.New(ctx, n.JS, led, worker.Config{Concurrency: 8, LeaseBucket: fmt.Sprintf("benchleases%d", seq.Add(1))})
	require.NoError(b, err)
	require.NoError(b, w.Handle("noop", func(ctx context.Context, t *worker.Task) error { return nil }))
	require.NoError(b, w.Start(ctx))
	defer func() { require.NoError(b, w.Close(context.Background())) }()
	subs := make([]kvledger.Submission, b.N)
	keys := make([]kvledger.IdempotencyKey, b.N)
	for i := range subs {
		keys[i] = kvledger.IdempotencyKey(fmt.Sprintf("j%d", i))
		subs[i] = kvledger.Submission{Key: keys[i], Kind: "noop"}
	}
	b.ResetTimer()
	start := time.Now()
	_, err = led.AdmitMany(ctx, "bench", subs)
	require.NoError(b, err)
	_, err = led.WaitFinal(ctx, keys...)
	require.NoError(b, err)
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
}

// BenchmarkIdlePickup: one task at a time on an idle worker, from just
// before Submit to the handler's start; reports p50 and p99.
func BenchmarkIdlePickup(b *testing.B) {
	n := natstest.WithServer(b)
	store := natstest.Open(b, "ledger", func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: fmt.Sprintf("bench%d", seq.Add(1))})
	})
	ctx := natstest.Context(b, 10*time.Minute)
	led, err := kvledger.New(store)
	require.NoError(b, err)
	w, err := worker.New(ctx, n.JS, led, worker.Config{LeaseBucket: fmt.Sprintf("benchleases%d", seq.Add(1))})
	require.NoError(b, err)
	started := make(chan time.Time, 1)
	require.NoError(b, w.Handle("noop", func(ctx context.Context, t *worker.Task) error {
		started <- time.Now()
		return nil
	}))
	require.NoError(b, w.Start(ctx))
	defer func() { require.NoError(b, w.Close(context.Background())) }()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		k := kvledger.IdempotencyKey(fmt.Sprintf("p%d", i))
		t0 := time.Now()
		ok, err := led.Submit(ctx, "bench", kvledger.Submission{Key: k, Kind: "noop"})
		require.NoError(b, err)
		require.True(b, ok)
		lat = append(lat, (<-started).Sub(t0))
		_, err = led.WaitFinal(ctx, k)
		require.NoError(b, err)
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
