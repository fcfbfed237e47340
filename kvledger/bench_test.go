package kvledger_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

// fill admits n records with 8 concurrent writers.
func fill(tb testing.TB, l *kvledger.Ledger, n int) {
	tb.Helper()
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				ok, err := l.Admit(ctx, "bench", kvledger.IdempotencyKey("task-"+strconv.Itoa(i)), 1, map[string]any{"i": i}, t0)
				if err != nil || !ok {
					tb.Errorf("admit %d: %v %v", i, ok, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestKVStoreSnapshotManyRecords: Snapshot streams a few thousand records
// (the 100k measurement is BenchmarkSnapshot100k).
func TestKVStoreSnapshotManyRecords(t *testing.T) {
	n := natstest.WithServer(t)
	l, err := kvledger.New(newKVStore(t, n.JS, kvledger.KVStoreConfig{}))
	require.NoError(t, err)
	const count = 5000
	fill(t, l, count)
	snap, err := l.Snapshot(natstest.Context(t, 30*time.Second))
	require.NoError(t, err)
	require.Len(t, snap.Tasks, count)
	require.NoError(t, snap.Validate())
}

// BenchmarkSnapshot100k measures one Snapshot of 100k records (set
// KVLEDGER_BENCH_N to change the count).
func BenchmarkSnapshot100k(b *testing.B) {
	count := 100_000
	if s := os.Getenv("KVLEDGER_BENCH_N"); s != "" {
		count, _ = strconv.Atoi(s)
	}
	n := natstest.WithServer(b)
	l, err := kvledger.New(newKVStore(b, n.JS, kvledger.KVStoreConfig{}))
	require.NoError(b, err)
	start := time.Now()
	fill(b, l, count)
	b.Logf("admitted %d records in %v (%.0f/s)", count, time.Since(start), float64(count)/time.Since(start).Seconds())
	b.ResetTimer()
	for b.Loop() {
		snap, err := l.Snapshot(context.Background())
		if err != nil || len(snap.Tasks) != count {
			b.Fatalf("snapshot: %d records, %v", len(snap.Tasks), err)
		}
	}
	b.ReportMetric(float64(count), "records/op")
}

// BenchmarkLifecycle measures Admit+Claim+Complete per task, on
// MemStore and KVStore.
func BenchmarkLifecycle(b *testing.B) {
	n := natstest.WithServer(b)
	for _, tc := range []struct {
		name  string
		store func() kvledger.Store
	}{
		{"mem", func() kvledger.Store { return kvledger.NewMemStore() }},
		{"kv", func() kvledger.Store { return newKVStore(b, n.JS, kvledger.KVStoreConfig{}) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			l, err := kvledger.New(tc.store())
			require.NoError(b, err)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				k := kvledger.IdempotencyKey(fmt.Sprintf("k%d", i))
				i++
				if _, err := l.Admit(ctx, "a", k, 1, nil, t0); err != nil {
					b.Fatal(err)
				}
				f, err := l.Claim(ctx, "a", k, "w", time.Minute, t0)
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Complete(ctx, "a", k, "w", f, kvledger.StatusCompleted, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
