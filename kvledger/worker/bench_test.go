package worker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// BenchmarkEndToEnd: b.N no-op tasks admitted in one AdmitMany (atomic
// batches), run by one worker with 8 handlers, until all are final.
// Reports tasks/s; the raw-queue baseline and ratios live in
// internal/bench.
func BenchmarkEndToEnd(b *testing.B) {
	n := natstest.WithServer(b)
	store := natstest.Open(b, "ledger", func(ctx context.Context) (*kvledger.KVStore, error) {
		return kvledger.NewKVStore(ctx, n.JS, kvledger.KVStoreConfig{Bucket: fmt.Sprintf("bench%d", seq.Add(1))})
	})
	ctx := natstest.Context(b, 10*time.Minute)
	require.NoError(b, store.EnableAtomicBatches(ctx))
	led, err := kvledger.New(store, nil)
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
