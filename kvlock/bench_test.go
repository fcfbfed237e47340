package kvlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvlock"
)

// BenchmarkContended compares barging and fair mode: 4 goroutines, each
// with its own Locker and connection, acquire and release one key.
func BenchmarkContended(b *testing.B) {
	for _, fair := range []bool{false, true} {
		name := "barging"
		if fair {
			name = "fair"
		}
		b.Run(name, func(b *testing.B) {
			n := natstest.WithServer(b)
			ctx := natstest.Context(b, 10*time.Minute)
			const workers = 4
			ls := make([]*kvlock.Locker, workers)
			for i := range ls {
				l, err := kvlock.New(ctx, n.NewJS(b), kvlock.Config{TTL: 5 * time.Second, Fair: fair})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = l.Close(ctx) })
				ls[i] = l
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N/workers + 1
			for _, l := range ls {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range per {
						k, err := l.Acquire(ctx, "bench")
						if err != nil {
							b.Error(err)
							return
						}
						_ = k.Release(ctx)
					}
				}()
			}
			wg.Wait()
		})
	}
}
