package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvlock"
)

// BenchmarkHold10kLocks: one Locker holds 10,000 locks with Hold (TTL
// 10s, renewed every TTL/3 by kvlease's scheduler) for
// NATSCOORD_BENCH_HOLD (default 60s), against a server in a child
// process. Goal: goroutines independent of the number of held locks (a
// watchdog goroutine and timer per Hold before). Reports goroutines while
// holding, renewals per lock per interval and heap per held lock, like
// BenchmarkHold10k does for leases.
func BenchmarkHold10kLocks(b *testing.B) {
	const ttl = 10 * time.Second
	js, count, hold := scaleSetup(b)
	ctx := context.Background()
	l := newLocker(b, js, kvlock.Config{TTL: ttl})
	_, release, err := l.Hold(ctx, "warm") // warm up every code path
	require.NoError(b, err)
	release()

	heap0, _, gor0 := measure()
	releases := make([]func(), count)
	hctxs := make([]context.Context, count)
	fillN(b, 16, count, func(i int) {
		hctx, release, err := l.Hold(ctx, "lock-"+strconv.Itoa(i))
		if err != nil {
			b.Errorf("Hold %d: %v", i, err)
			return
		}
		hctxs[i], releases[i] = hctx, release
	})
	if b.Failed() {
		b.FailNow()
	}
	st0 := l.Stats().Lease
	held, maxGor, maxRSS := sampleHold(hold)
	st1 := l.Stats().Lease
	heap1, rss1, gor1 := measure()
	for i, hctx := range hctxs {
		if err := hctx.Err(); err != nil {
			b.Fatalf("hold %d: %v", i, context.Cause(hctx))
		}
	}
	require.Zero(b, st1.Lost-st0.Lost, "locks lost")
	renewals := float64(st1.Renewals - st0.Renewals)
	holdMetrics{unit: "lock", count: count, held: held, gor0: gor0, gor1: gor1, maxGor: maxGor,
		heap0: heap0, heap1: heap1, rss1: rss1, maxRSS: maxRSS}.report(b)
	b.ReportMetric(renewals/(float64(count)*held.Seconds()/(ttl/3).Seconds()), "renewals/lock/interval")
	b.ReportMetric(float64(st1.RenewFailures-st0.RenewFailures), "renew-failures")
	for _, r := range releases {
		r()
	}
}
