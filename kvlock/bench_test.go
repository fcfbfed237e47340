package kvlock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// BenchmarkContended compares barging and fair mode: 4 goroutines, each
// with its own Locker and connection, acquire and release one key. The
// two modes run in alternating rounds against one server (on keys of
// their own Names), and x_barging is fair's rate over barging's in the
// same run. The figures BENCHMARKS.md reports come from internal/testsuite/bench.
func BenchmarkContended(b *testing.B) {
	n := natstest.WithServer(b)
	ctx := natstest.Context(b, 10*time.Minute)
	const workers, round = 4, 100
	lockers := func(cfg kvlock.Config) []*kvlock.Locker {
		ls := make([]*kvlock.Locker, workers)
		for i := range ls {
			l, err := kvlock.New(ctx, n.NewJS(b), cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = l.Close(ctx) })
			ls[i] = l
		}
		return ls
	}
	barging := lockers(kvlock.Config{Name: "barging", TTL: 5 * time.Second})
	fair := lockers(kvlock.Config{Name: "fair", TTL: 5 * time.Second, Fair: true})
	run := func(ls []*kvlock.Locker) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for _, l := range ls {
			wg.Go(func() {
				for range round / workers {
					k, err := l.Acquire(ctx, "bench")
					if err != nil {
						b.Error(err)
						return
					}
					_ = k.Release(context.Background())
				}
			})
		}
		wg.Wait()
		return time.Since(start)
	}
	var tb, tf time.Duration
	rounds := 0
	for b.Loop() {
		tb += run(barging)
		tf += run(fair)
		rounds++
	}
	per := float64(rounds * round)
	b.ReportMetric(float64(tf.Nanoseconds())/per, "ns/op")
	b.ReportMetric(per/tf.Seconds(), "fair-acq/s")
	b.ReportMetric(per/tb.Seconds(), "barging-acq/s")
	b.ReportMetric(tb.Seconds()/tf.Seconds(), "x_barging")
}
