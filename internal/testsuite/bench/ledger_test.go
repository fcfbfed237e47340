package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
)

var t0 = time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)

// benchTask is the payload of every admitted task.
var benchTask = map[string]any{"job": "resize", "image": "img-000042.png", "width": 640}

var ledgerSeq atomic.Int64

// newLedger opens a KVStore ledger on a fresh bucket of n (its writes are
// its events: nothing else is published).
func newLedger(b *testing.B, n *natstest.Node) (*kvledger.Ledger, string) {
	b.Helper()
	bucket := fmt.Sprintf("ledger%d", ledgerSeq.Add(1))
	st, err := kvledger.NewKVStore(context.Background(), n.JS, kvledger.KVStoreConfig{Bucket: bucket})
	require.NoError(b, err)
	l, err := kvledger.New(st)
	require.NoError(b, err)
	return l, bucket
}

// rawKV is a plain KV bucket on the same server, configured like a
// ledger bucket (file storage, history 1), for the raw baselines.
func rawKV(b *testing.B, js jetstream.JetStream, name string) jetstream.KeyValue {
	b.Helper()
	kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: name, History: 1, Storage: jetstream.FileStorage})
	require.NoError(b, err)
	return kv
}

// recordLen returns the size of a stored ledger record (any key of the
// bucket), so raw baselines write values of the same size.
func recordLen(b *testing.B, js jetstream.JetStream, bucket string) int {
	b.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, bucket)
	require.NoError(b, err)
	keys, err := kv.ListKeys(ctx)
	require.NoError(b, err)
	size := 0
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err == nil {
			size = max(size, len(e.Value()))
		}
	}
	require.NotZero(b, size)
	return size
}

func admit(b *testing.B, l *kvledger.Ledger, key string, needs ...kvledger.IdempotencyKey) {
	ok, err := l.Admit(context.Background(), "bench", kvledger.IdempotencyKey(key), 1, benchTask, t0, needs...)
	if err != nil || !ok {
		b.Fatalf("Admit %s: %v %v", key, ok, err)
	}
}

// BenchmarkLedgerAdmit: Admit of a new key against raw kv.Create of a
// value of the same size in a bucket of the same kind. Target x_raw >= 0.8.
// x_get+create compares Admit with a raw leader read plus create: the two
// round trips Admit of a new key made before it became insert-first (one
// create; a read only when the key exists). Kept as a diagnostic.
func BenchmarkLedgerAdmit(b *testing.B) {
	for _, sm := range syncModes {
		b.Run(sm.name, func(b *testing.B) {
			n := newServer(b, sm.always)
			ctx := context.Background()
			l, bucket := newLedger(b, n)
			admit(b, l, "warm")
			kv := rawKV(b, n.JS, "rawbench")
			val := make([]byte, recordLen(b, n.JS, bucket))
			i := 0
			var s split
			for b.Loop() {
				k := "t" + strconv.Itoa(i)
				i++
				s.pair(func() {
					if _, err := kv.Create(ctx, k, val); err != nil {
						b.Fatalf("kv.Create: %v", err)
					}
				}, func() { admit(b, l, k) })
				// The second baseline: what Admit of a new key does today,
				// a leader read (no message) and then the create.
				s.timeExtra(func() { leaderGetCreate(b, n, kv, "x"+k, val) })
			}
			s.report(b)
			s.reportExtra(b, "get+create")
		})
	}
}

// leaderGetCreate is a raw leader read of key (a non-direct
// STREAM.MSG.GET by last subject, which a new key answers with "no
// message found") followed by kv.Create.
func leaderGetCreate(b *testing.B, n *natstest.Node, kv jetstream.KeyValue, key string, val []byte) {
	ctx := context.Background()
	bucket := kv.Bucket()
	req := []byte(`{"last_by_subj":"$KV.` + bucket + `.` + key + `"}`)
	if _, err := n.NC.Request("$JS.API.STREAM.MSG.GET.KV_"+bucket, req, 5*time.Second); err != nil {
		b.Fatalf("leader get: %v", err)
	}
	if _, err := kv.Create(ctx, key, val); err != nil {
		b.Fatalf("kv.Create: %v", err)
	}
}

// BenchmarkLedgerClaimComplete: claim→complete cycles with 8 workers on
// distinct pending tasks, against 8 raw workers doing what the cycle's
// writes are made of (Get+Update, twice) on keys of the same size.
// Rounds of 8×25 cycles alternate between the two.
func BenchmarkLedgerClaimComplete(b *testing.B) {
	const workers, per = 8, 25
	n := newServer(b, false)
	ctx := context.Background()
	l, bucket := newLedger(b, n)
	admit(b, l, "warm")
	kv := rawKV(b, n.JS, "rawbench")
	val := make([]byte, recordLen(b, n.JS, bucket))
	for w := range workers {
		for j := range per {
			_, err := kv.Put(ctx, fmt.Sprintf("w%d.%d", w, j), val)
			require.NoError(b, err)
		}
	}
	var rawT, primT time.Duration
	cycles, round := 0, 0
	for b.Loop() {
		b.StopTimer()
		keys := make([][]string, workers)
		fillN(b, workers, workers*per, func(i int) {
			k := fmt.Sprintf("r%d.%d", round, i)
			admit(b, l, k)
		})
		for i := range workers * per {
			keys[i%workers] = append(keys[i%workers], fmt.Sprintf("r%d.%d", round, i))
		}
		round++
		b.StartTimer()
		primT += parallel(b, workers, func(w int) error {
			owner := kvledger.OwnerID(fmt.Sprintf("w%d", w))
			for _, k := range keys[w] {
				f, err := l.Claim(ctx, "bench", kvledger.IdempotencyKey(k), owner, time.Minute, t0)
				if err != nil {
					return err
				}
				if err := l.Complete(ctx, "bench", kvledger.IdempotencyKey(k), owner, f, kvledger.StatusCompleted, t0); err != nil {
					return err
				}
			}
			return nil
		})
		rawT += parallel(b, workers, func(w int) error {
			for j := range per {
				k := fmt.Sprintf("w%d.%d", w, j)
				for range 2 {
					e, err := kv.Get(ctx, k)
					if err != nil {
						return err
					}
					if _, err := kv.Update(ctx, k, val, e.Revision()); err != nil {
						return err
					}
				}
			}
			return nil
		})
		cycles += workers * per
	}
	b.ReportMetric(float64(primT.Nanoseconds())/float64(cycles), "ns/op")
	b.ReportMetric(float64(cycles)/primT.Seconds(), "cycles/s")
	b.ReportMetric(float64(cycles)/rawT.Seconds(), "raw-cycles/s")
	b.ReportMetric(rawT.Seconds()/primT.Seconds(), "x_raw")
}

// parallel runs f(0..workers-1) concurrently and returns the wall time;
// an error fails the benchmark.
func parallel(b *testing.B, workers int, f func(w int) error) time.Duration {
	var wg sync.WaitGroup
	errs := make([]error, workers)
	start := time.Now()
	for w := range workers {
		wg.Go(func() { errs[w] = f(w) })
	}
	wg.Wait()
	d := time.Since(start)
	for _, err := range errs {
		if err != nil {
			b.Fatalf("worker: %v", err)
		}
	}
	return d
}

// fillN calls f(0..count-1) from writers goroutines.
func fillN(b *testing.B, writers, count int, f func(i int)) {
	b.Helper()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < count; i += writers {
				f(i)
			}
		})
	}
	wg.Wait()
}
