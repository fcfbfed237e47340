package dashboard

import (
	"fmt"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
)

// BenchmarkCharts is the overview charts' cost per render with a full
// hour: a completion every second, 60 samples of 16 kinds, and a view of
// 10k records in 20 kinds.
func BenchmarkCharts(b *testing.B) {
	now := time.Date(2026, 12, 1, 12, 0, 30, 0, time.UTC)
	clk := clock.NewManual(now)
	h := &Handler{cfg: Config{Clock: clk}, tasks: newTaskView(clk), started: now.Add(-2 * time.Hour)}
	for s := range chartSeconds {
		h.finishes.add(now.Add(-time.Duration(s)*time.Second), now, s%7 == 0)
	}
	for m := range chartMinutes {
		byKind := make(map[string]int)
		for k := range 20 {
			byKind[fmt.Sprintf("kind-%02d", k)] = (k + 1) * (m + 1)
		}
		h.backlog.record(sampleOf(chartFirst(now).Add(time.Duration(m-1)*time.Minute), byKind))
	}
	for i := range 10000 {
		h.tasks.put(taskSummary{Key: kvledger.IdempotencyKey(fmt.Sprintf("t-%d", i)), Kind: fmt.Sprintf("kind-%02d", i%20), Status: kvledger.StatusPending, Rev: uint64(i + 1)})
	}
	b.ReportAllocs()
	var n int
	for b.Loop() {
		d := h.charts()
		n = len(d.Finished.SVG) + len(d.Backlog.SVG)
	}
	b.ReportMetric(float64(n), "svg-bytes")
}
