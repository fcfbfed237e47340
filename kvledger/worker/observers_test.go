package worker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/opstats"
)

// RecorderObserver counts attempts by kind and result with their run
// times, and pickup latency from when the record says the task became
// due: its RunAt, else its last write; a task with needs has no due time
// its record can date.
func TestRecorderObserverAttemptsAndPickup(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	rec := opstats.New()
	events := &recordingObserver{}
	w := e.worker(worker.Config{Observer: worker.Observers(nil, worker.RecorderObserver(rec), eventsOnly{events}), MaxAttempts: 3}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			if task.Key() == "flaky" && task.Attempt() == 1 {
				return errors.New("first try fails")
			}
			return nil
		}))
	})
	now := time.Now()
	// Admitted (by its record) 5s ago: its pickup counts from then.
	e.submit(kvledger.Submission{Key: "old", Kind: "job", Now: now.Add(-5 * time.Second)})
	// Admitted an hour ago to run shortly: due at its RunAt.
	runAt := now.Add(200 * time.Millisecond)
	e.submit(kvledger.Submission{Key: "delayed", Kind: "job", Now: now.Add(-time.Hour), RunAt: runAt})
	e.submit(kvledger.Submission{Key: "child", Kind: "job", Needs: []kvledger.IdempotencyKey{"old"}})
	e.submit(kvledger.Submission{Key: "flaky", Kind: "job"})
	e.waitFinal(20*time.Second, "old", "delayed", "child", "flaky")
	attempt := func(result string) uint64 {
		return rec.Count(opstats.Labels{Component: "worker", Name: "job", Op: "attempt", Outcome: result})
	}
	// Stats counts an outcome last, after the Observer heard of it (run.go's
	// settle): once Stats has the four, so has the recorder.
	natstest.Eventually(t, 5*time.Second, func() bool { return w.Stats().Completed == 4 }, "counted")
	require.EqualValues(t, 4, attempt("completed"))
	require.EqualValues(t, 1, attempt("retried"))

	starts := map[kvledger.IdempotencyKey][]worker.Event{}
	events.mu.Lock()
	for _, ev := range events.starts {
		starts[ev.Key] = append(starts[ev.Key], ev)
	}
	var retryAt time.Time
	for _, f := range events.finishes {
		if f.Key == "flaky" && f.Result == worker.ResultRetried {
			retryAt = f.RunAt
		}
	}
	events.mu.Unlock()
	require.GreaterOrEqual(t, starts["old"][0].Pickup, 5*time.Second)
	require.True(t, starts["delayed"][0].Due.Equal(runAt), "due at RunAt %v, not at admission: %v", runAt, starts["delayed"][0].Due)
	require.Less(t, starts["delayed"][0].Pickup, 5*time.Second)
	require.True(t, starts["child"][0].Due.IsZero(), "a task with needs is not dated")
	require.Zero(t, starts["child"][0].Pickup)
	require.Len(t, starts["flaky"], 2)
	require.False(t, retryAt.IsZero())
	require.True(t, starts["flaky"][1].Due.Equal(retryAt), "a retry is due at its RunAt")

	// One pickup per dated start: old, delayed and flaky's two.
	pickup := opstats.Labels{Component: "worker", Name: "job", Op: "pickup", Outcome: "started"}
	require.EqualValues(t, 4, rec.Count(pickup))
	for _, s := range rec.Snapshot() {
		if s.Labels == pickup {
			require.GreaterOrEqual(t, s.Max, 5*time.Second, "old's pickup")
		}
	}
	var b strings.Builder
	require.NoError(t, rec.WritePrometheus(&b))
	require.Contains(t, b.String(), `natscoord_operations_total{component="worker",name="job",op="attempt",outcome="retried"} 1`)
	require.Contains(t, b.String(), `natscoord_operation_duration_seconds_count{component="worker",name="job",op="pickup",outcome="started"} 4`)
}

// eventsOnly records events without passing them on.
type eventsOnly struct{ r *recordingObserver }

func (o eventsOnly) OnStart(_ context.Context, e worker.Event) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.r.starts = append(o.r.starts, e)
}

func (o eventsOnly) OnFinish(_ context.Context, e worker.Event) {
	o.r.mu.Lock()
	defer o.r.mu.Unlock()
	o.r.finishes = append(o.r.finishes, e)
}

func TestObserversFanOut(t *testing.T) {
	require.Nil(t, worker.Observers())
	require.Nil(t, worker.Observers(nil, nil))
	a, b := &recordingObserver{}, &recordingObserver{}
	one := eventsOnly{a}
	require.Equal(t, worker.Observer(one), worker.Observers(nil, one))
	both := worker.Observers(eventsOnly{a}, nil, eventsOnly{b})
	both.OnStart(context.Background(), worker.Event{Key: "k"})
	both.OnFinish(context.Background(), worker.Event{Key: "k", Result: worker.ResultCompleted})
	for _, r := range []*recordingObserver{a, b} {
		require.Len(t, r.starts, 1)
		require.Len(t, r.finishes, 1)
	}
}

func TestStatsWritePrometheus(t *testing.T) {
	var b strings.Builder
	require.NoError(t, worker.Stats{Running: 2, Ready: 5, Started: 9, Completed: 6, Retried: 1, Failed: 1, Lost: 1,
		Contended: 3, TakenOver: 4, Scheduled: 7, Panics: 8}.WritePrometheus(&b))
	out := b.String()
	for _, line := range []string{
		"# TYPE natscoord_worker_running gauge", "natscoord_worker_running 2", "natscoord_worker_ready 5",
		"# TYPE natscoord_worker_attempts_started_total counter", "natscoord_worker_attempts_started_total 9",
		`natscoord_worker_attempts_total{result="completed"} 6`, `natscoord_worker_attempts_total{result="retried"} 1`,
		`natscoord_worker_attempts_total{result="failed"} 1`, `natscoord_worker_attempts_total{result="released"} 0`,
		`natscoord_worker_attempts_total{result="cancelled"} 0`, `natscoord_worker_attempts_total{result="lost"} 1`,
		"natscoord_worker_panics_total 8", "natscoord_worker_claims_contended_total 3",
		"natscoord_worker_claims_taken_over_total 4", "natscoord_worker_scheduled_total 7",
	} {
		require.Contains(t, out, line+"\n")
	}
}
