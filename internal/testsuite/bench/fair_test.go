package bench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlock"
)

// BenchmarkFairUncontended: one client's Acquire + Release of a reused
// key in fair mode, against the same cycle in barging mode (the default),
// interleaved op by op on one server. Both Lockers share the bucket under
// different Names. Goal x_raw (here: fair time against barging time) >= 0.6: fair mode costs little when
// nobody waits. x_raw is the fair cycle against the raw 2-round-trip cycle.
// The contended figures are BenchmarkContended/kvlock-fair (x_raw against
// the raw watch-and-retry loop).
func BenchmarkFairUncontended(b *testing.B) {
	n := newServer(b, false)
	ctx := context.Background()
	barging := newLocker(b, n.JS, kvlock.Config{Name: "barging", TTL: benchTTL})
	fair := newLocker(b, n.JS, kvlock.Config{Name: "fair", TTL: benchTTL, Fair: true})
	cycle := func(l *kvlock.Locker) func() {
		return func() {
			k, err := l.Acquire(ctx, "u")
			if err != nil {
				b.Fatalf("acquire: %v", err)
			}
			if err := k.Release(ctx); err != nil {
				b.Fatalf("release: %v", err)
			}
		}
	}
	cycle(barging)()
	cycle(fair)()
	k, err := fair.Acquire(ctx, "size")
	require.NoError(b, err)
	size := valueLen(b, n.JS, fair.Manager().Bucket(), "fair.l.size")
	require.NoError(b, k.Release(ctx))
	r := newRawLock(n.JS, fair.Manager().Bucket(), "rawfair", size, benchTTL)
	r.cycle(b, ctx)
	var s split
	for b.Loop() {
		s.pair(cycle(barging), cycle(fair))
		s.timeExtra(func() { r.cycle(b, ctx) })
	}
	// The "raw" side of the split is barging here, so x_raw is fair
	// against barging; x_rawcycle is fair against the raw cycle.
	s.report(b)
	s.reportExtra(b, "rawcycle")
}
