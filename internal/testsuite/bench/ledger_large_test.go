package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/kvledger"
)

// BenchmarkLedgerLarge: a ledger of 1k records and one of 100k
// (NATSCOORD_BENCH_LEDGER_N) on one server, filled by 16 writers.
//
//   - complete-failed-10-deps: Complete(failed) of a task with 10 direct
//     dependents, on both ledgers alternately; x_small = time on the large
//     ledger / time on the small one (target <= 1.5: the failure walk costs
//     the affected subgraph, not the ledger).
//   - snapshot: one Snapshot of the large ledger.
func BenchmarkLedgerLarge(b *testing.B) {
	large := 100_000
	if s := os.Getenv("NATSCOORD_BENCH_LEDGER_N"); s != "" {
		var err error
		large, err = strconv.Atoi(s)
		require.NoError(b, err)
	}
	const small = 1000
	n := newServer(b, false)
	ctx := context.Background()
	ls, _ := newLedger(b, n)
	ll, _ := newLedger(b, n)
	start := time.Now()
	fillN(b, 16, small, func(i int) { admit(b, ls, "fill-"+strconv.Itoa(i)) })
	fillN(b, 16, large, func(i int) { admit(b, ll, "fill-"+strconv.Itoa(i)) })
	fill := time.Since(start)
	b.Logf("admitted %d+%d records in %v (%.0f/s)", small, large, fill.Round(time.Millisecond), float64(small+large)/fill.Seconds())

	next := 0 // task numbers go on across runs of the sub-benchmark (-count)
	b.Run("complete-failed-10-deps", func(b *testing.B) {
		// prepare admits root and its 10 dependents and claims root.
		prepare := func(l *kvledger.Ledger, i int) (kvledger.IdempotencyKey, kvledger.FenceToken) {
			root := kvledger.IdempotencyKey("root-" + strconv.Itoa(i))
			admit(b, l, string(root))
			for d := range 10 {
				admit(b, l, fmt.Sprintf("dep-%d-%d", i, d), root)
			}
			f, err := l.Claim(ctx, "bench", root, "w", time.Minute, t0)
			if err != nil {
				b.Fatalf("Claim: %v", err)
			}
			return root, f
		}
		fail := func(l *kvledger.Ledger, root kvledger.IdempotencyKey, f kvledger.FenceToken) func() {
			return func() {
				if err := l.Complete(ctx, "bench", root, "w", f, kvledger.StatusFailed, t0); err != nil {
					b.Fatalf("Complete(failed): %v", err)
				}
			}
		}
		var s split // raw = small ledger, prim = large ledger
		i := next
		for b.Loop() {
			b.StopTimer()
			rs, fs := prepare(ls, i)
			rl, fl := prepare(ll, i)
			b.StartTimer()
			s.pair(fail(ls, rs, fs), fail(ll, rl, fl))
			i++
		}
		next = i
		// The walk did block the dependents.
		for _, l := range []*kvledger.Ledger{ls, ll} {
			by, blocked, err := l.Blocked(ctx, kvledger.IdempotencyKey(fmt.Sprintf("dep-%d-9", i-1)))
			require.NoError(b, err)
			require.True(b, blocked)
			require.Equal(b, kvledger.IdempotencyKey("root-"+strconv.Itoa(i-1)), by)
		}
		if s.n == 0 {
			return
		}
		nf := float64(s.n)
		b.ReportMetric(float64(s.prim.Nanoseconds())/nf, "ns/op")
		b.ReportMetric(float64(s.raw.Nanoseconds())/nf, "small-ns/op")
		b.ReportMetric(s.prim.Seconds()/s.raw.Seconds(), "x_small")
	})

	b.Run("snapshot", func(b *testing.B) {
		for b.Loop() {
			snap, err := ll.Snapshot(ctx)
			if err != nil {
				b.Fatalf("Snapshot: %v", err)
			}
			if len(snap.Tasks) < large {
				b.Fatalf("Snapshot: %d records, want >= %d", len(snap.Tasks), large)
			}
		}
		b.ReportMetric(float64(large), "records")
		b.ReportMetric(float64(small+large)/fill.Seconds(), "fill-admits/s")
	})
}
