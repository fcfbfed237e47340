package dashboard

import (
	"testing"
	"time"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/kvledger"
)

// The phase counts follow writes, removals and the clock: a scheduled
// record counts as pending once its run-at passes, with no write.
func TestPhaseCountsFollowWritesAndTheClock(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	v := newTaskView(clock.Func(func() time.Time { return t0 }))
	v.put(taskSummary{Key: "s", Status: kvledger.StatusPending, RunAt: t0.Add(time.Minute), Rev: 1})
	v.put(taskSummary{Key: "r", Status: kvledger.StatusPending, RunAt: t0.Add(time.Hour), Attempts: 1, Rev: 2})
	v.put(taskSummary{Key: "c", Status: kvledger.StatusFailed, Cancelled: true, Rev: 3})
	v.put(taskSummary{Key: "p", Status: kvledger.StatusPending, Rev: 4})
	want := func(at time.Time, exp map[kvledger.Phase]int) {
		t.Helper()
		got, n := v.phaseCounts(at)
		sum := 0
		for _, p := range kvledger.Phases {
			if got[p] != exp[p] {
				t.Fatalf("at %s: %s = %d, want %d (%v)", at, p, got[p], exp[p], got)
			}
			sum += got[p]
		}
		if sum != n {
			t.Fatalf("counts add up to %d of %d records", sum, n)
		}
	}
	want(t0, map[kvledger.Phase]int{kvledger.PhaseScheduled: 1, kvledger.PhaseRetrying: 1, kvledger.PhaseCancelled: 1, kvledger.PhasePending: 1})
	want(t0.Add(2*time.Minute), map[kvledger.Phase]int{kvledger.PhasePending: 2, kvledger.PhaseRetrying: 1, kvledger.PhaseCancelled: 1})

	v.put(taskSummary{Key: "s", Status: kvledger.StatusClaimed, Attempts: 1, Rev: 5})
	v.put(taskSummary{Key: "c", Status: kvledger.StatusPending, Rev: 6}) // reopened
	v.remove("r", 7)
	want(t0, map[kvledger.Phase]int{kvledger.PhaseRunning: 1, kvledger.PhasePending: 2})
	if len(v.timed) != 0 {
		t.Fatalf("timed holds %d records after their run-at went", len(v.timed))
	}
}

// The pages' "ago" and "until" read Config.Clock, as the phases beside
// them do; they read the system clock before.
func TestAgoAndUntilReadTheClock(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	f := baseFuncs("", clock.Func(func() time.Time { return t0 }))
	if got := f["ago"].(func(time.Time) string)(t0.Add(-time.Minute)); got != "1m0s" {
		t.Fatalf("ago = %q, want 1m0s", got)
	}
	if got := f["until"].(func(time.Time) string)(t0.Add(2 * time.Second)); got != "2s" {
		t.Fatalf("until = %q, want 2s", got)
	}
}
