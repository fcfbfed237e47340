package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A worker whose clock reads 00:00:00 EST on 2027-03-14, two hours
// before New York springs forward, keeps admitting its schedules, and
// Close returns. Computing the next period of "0 5 * * *" or "@daily" in
// America/New_York from there spun forever under the schedule lock
// (issue 34 item 1): no schedule admitted anything again, and Close
// waited for the loop forever. Both a schedule registered in code and
// one stored in the ledger are computed across the gap.
func TestSchedulesRunAcrossSpringForwardGap(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ny, err := time.LoadLocation("America/New_York")
	require.NoError(t, err)
	base, started := time.Date(2027, 3, 14, 5, 0, 0, 0, time.UTC), time.Now()
	clk := clock.Func(func() time.Time { return base.Add(time.Since(started)) })
	// The worker is made here, not by e.worker, whose cleanup's Close
	// would block the test on the old code (Close waits for the loop).
	w := natstest.Open(t, "worker", func(ctx context.Context) (*worker.Worker, error) {
		return worker.New(ctx, e.js, e.led, worker.Config{Clock: clk, LeaseBucket: e.leases})
	})
	require.NoError(t, w.Schedule(worker.Schedule{Name: "ny", Spec: "0 5 * * *", Location: ny, Task: kvledger.Submission{Kind: "tick"}}))
	require.NoError(t, w.Schedule(worker.Schedule{Name: "tick", Spec: "@every 1s", Task: kvledger.Submission{Kind: "tick"}}))
	require.NoError(t, w.Handle("tick", func(context.Context, *worker.Task) error { return nil }))
	require.NoError(t, w.Start(natstest.Context(t, 20*time.Second)))
	closed := make(chan error, 1)
	t.Cleanup(func() {
		go func() { closed <- closeWorker(w) }()
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(25 * time.Second):
			t.Error("Close did not return within 25s")
		}
	})

	// Admissions are counted in the ledger: the worker's Stats took the
	// lock the spinning loop held.
	store := e.led.Store().(*kvledger.KVStore)
	ticks := func() int {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		n := 0
		if err := store.Range(ctx, func(s kvledger.TaskState) bool {
			if name, _, ok := worker.ParsePeriodKey(s.Key); ok && name == "tick" {
				n++
			}
			return true
		}); err != nil {
			t.Logf("reading the ledger: %v", err)
			return -1
		}
		return n
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return ticks() >= 1 }, "tick admitted beside a New York schedule at the gap")

	_, err = store.CreateSchedule(natstest.Context(t, 10*time.Second), kvledger.Schedule{Name: "ny-daily", Spec: "@daily",
		TimeZone: "America/New_York", Task: kvledger.ScheduleTask{Kind: "tick"}})
	require.NoError(t, err)
	after := ticks()
	natstest.Eventually(t, 10*time.Second, func() bool { return ticks() >= after+2 }, "tick admitted after a stored New York schedule came at the gap")

}
