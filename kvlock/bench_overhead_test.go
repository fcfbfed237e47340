package kvlock_test

import (
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/opstats"
)

// BenchmarkCycleOverhead times one uncontended TryAcquire+Release cycle
// with the circuit breaker off (the baseline), with its default, and with
// the default plus a RecorderObserver, against one server in one run, so
// their ratio is the cost of the breaker and of recording.
func BenchmarkCycleOverhead(b *testing.B) {
	n := natstest.WithServer(b)
	ctx := natstest.Context(b, 10*time.Minute)
	for _, c := range []struct {
		name string
		cfg  kvlock.Config
	}{
		{"breaker-off", kvlock.Config{Breaker: kvlock.BreakerPolicy{Disabled: true}}},
		{"breaker-default", kvlock.Config{}},
		{"breaker-and-recorder", kvlock.Config{Observer: kvlock.RecorderObserver(opstats.New())}},
	} {
		b.Run(c.name, func(b *testing.B) {
			c.cfg.TTL = 5 * time.Second
			l, err := kvlock.New(ctx, n.NewJS(b), c.cfg)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = l.Close(ctx) })
			key := "bench-" + c.name
			b.ResetTimer()
			for range b.N {
				k, ok, err := l.TryAcquire(ctx, key)
				if err != nil || !ok {
					b.Fatal(ok, err)
				}
				_ = k.Release(ctx)
			}
		})
	}
}
