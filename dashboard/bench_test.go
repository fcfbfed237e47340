package dashboard

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
)

// view100k is a view of 100k records: 1% failed, 10% kind "b", keys
// "job-<n>" and every 1000th "rare-<n>".
func view100k(tb testing.TB) *taskView {
	tb.Helper()
	v := newTaskView(clock.Real())
	now := time.Now()
	for i := range 100_000 {
		s := taskSummary{Key: kvledger.IdempotencyKey(fmt.Sprintf("job-%06d", i)), Status: kvledger.StatusCompleted,
			Kind: "a", Rev: uint64(i + 1), CreatedAt: now, UpdatedAt: now}
		if i%1000 == 0 {
			s.Key = kvledger.IdempotencyKey(fmt.Sprintf("rare-%06d", i))
		}
		if i%100 == 0 {
			s.Status = kvledger.StatusFailed
		}
		if i%10 == 0 {
			s.Kind = "b"
		}
		if i > 0 {
			s.Needs = []kvledger.IdempotencyKey{kvledger.IdempotencyKey(fmt.Sprintf("job-%06d", i-1))}
		}
		v.put(s)
	}
	return v
}

// BenchmarkTaskPage measures one page of 50 at 100k records against the
// baseline of reading the whole view once (what a list without paging
// would cost before rendering anything).
func BenchmarkTaskPage(b *testing.B) {
	v := view100k(b)
	cases := []struct {
		name string
		f    taskFilter
	}{
		{"newest", taskFilter{}},
		{"status-1pct", taskFilter{Phase: kvledger.PhaseFailed}},
		{"kind-10pct", taskFilter{Kind: "b"}},
		{"prefix-0.1pct", taskFilter{Prefix: "rare-"}},
	}
	for _, c := range cases {
		b.Run("page/"+c.name, func(b *testing.B) {
			for b.Loop() {
				if p := v.page(c.f, 0, 50); len(p.Rows) != 50 {
					b.Fatalf("%d rows", len(p.Rows))
				}
			}
		})
	}
	b.Run("baseline/whole-view", func(b *testing.B) {
		for b.Loop() {
			if p := v.page(taskFilter{}, 0, 100_000); len(p.Rows) != 100_000 {
				b.Fatalf("%d rows", len(p.Rows))
			}
		}
	})
	b.Run("overview/counts+oldest-ready", func(b *testing.B) {
		for b.Loop() {
			v.phaseCounts(time.Now())
			v.oldestReady(time.Now())
		}
	})
}

// TestViewMemoryAt100k reports what the view costs per record (a
// measurement, logged; the bound is loose on purpose).
func TestViewMemoryAt100k(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := view100k(t)
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := float64(after.HeapAlloc-before.HeapAlloc) / 100_000
	t.Logf("task view: %.0f bytes per record at 100k records", per)
	if per > 2000 {
		t.Errorf("the view costs %.0f bytes per record", per)
	}
	runtime.KeepAlive(v)
}

func TestViewRemove(t *testing.T) {
	v := newTaskView(clock.Real())
	for i := range 5 {
		v.put(taskSummary{Key: kvledger.IdempotencyKey(fmt.Sprint(i)), Status: kvledger.StatusCompleted, Rev: uint64(i + 1)})
	}
	v.remove("2", 1) // older than the record: ignored
	if _, ok := v.get("2"); !ok {
		t.Fatal("a stale deletion removed a record")
	}
	v.remove("2", 10)
	if _, ok := v.get("2"); ok {
		t.Fatal("not removed")
	}
	p := v.page(taskFilter{}, 0, 10)
	if len(p.Rows) != 4 || p.Rows[0].Key != "4" || p.Rows[2].Key != "1" {
		t.Fatalf("page after remove: %+v", p.Rows)
	}
	if c, n := v.statusCounts(); c[kvledger.StatusCompleted] != 4 || n != 4 {
		t.Fatalf("counts %v %d", c, n)
	}
}
