package worker_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

type recordingObserver struct {
	mu       sync.Mutex
	starts   []worker.Event
	finishes []worker.Event
	next     worker.Observer
	// stats, once watch set it, is read at each OnFinish: an end its
	// Stats had counted already goes to countedFirst (the worker
	// observes an end before it counts it, on every path).
	stats        func() worker.Stats
	seen         map[worker.Result]uint64
	countedFirst []worker.Event
}

// watch makes o check, at each OnFinish, that w had not counted the end
// yet.
func (o *recordingObserver) watch(w *worker.Worker) {
	o.mu.Lock()
	o.stats, o.seen = w.Stats, map[worker.Result]uint64{}
	o.mu.Unlock()
}

// counted is the count of r in s.
func counted(s worker.Stats, r worker.Result) uint64 {
	return map[worker.Result]uint64{worker.ResultCompleted: s.Completed, worker.ResultRetried: s.Retried,
		worker.ResultFailed: s.Failed, worker.ResultReleased: s.Released, worker.ResultCancelled: s.Cancelled,
		worker.ResultLost: s.Lost}[r]
}

func (o *recordingObserver) OnStart(ctx context.Context, e worker.Event) {
	o.mu.Lock()
	o.starts = append(o.starts, e)
	o.mu.Unlock()
	o.next.OnStart(ctx, e)
}

func (o *recordingObserver) OnFinish(ctx context.Context, e worker.Event) {
	o.mu.Lock()
	o.finishes = append(o.finishes, e)
	if o.stats != nil {
		// The n-th end of a result observed: at most n-1 counted.
		o.seen[e.Result]++
		if counted(o.stats(), e.Result) >= o.seen[e.Result] {
			o.countedFirst = append(o.countedFirst, e)
		}
	}
	o.mu.Unlock()
	o.next.OnFinish(ctx, e)
}

// The Observer sees one start and one finish per attempt, with the
// attempt number, the fence, the outcome and the next run time of a
// retry; SlogObserver logs them.
func TestObserverSeesEveryAttempt(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var logs natstest.SyncBuffer
	obs := &recordingObserver{next: worker.SlogObserver{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}}
	w := e.worker(worker.Config{Observer: obs, MaxAttempts: 2}, func(w *worker.Worker) {
		obs.watch(w)
		require.NoError(t, w.Handle("once-flaky", func(ctx context.Context, task *worker.Task) error {
			if task.Attempt() == 1 {
				return errors.New("first try fails")
			}
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "k", Kind: "once-flaky"})
	e.waitFinal(10*time.Second, "k")
	natstest.Eventually(t, 5*time.Second, func() bool { return w.Stats().Completed == 1 }, "recorded")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Empty(t, obs.countedFirst, "counted before observed")
	require.Len(t, obs.starts, 2)
	require.Len(t, obs.finishes, 2)
	require.Equal(t, worker.ResultRetried, obs.finishes[0].Result)
	require.Equal(t, 1, obs.finishes[0].Attempt)
	require.False(t, obs.finishes[0].RunAt.IsZero())
	require.EqualError(t, obs.finishes[0].Err, "first try fails")
	require.Equal(t, worker.ResultCompleted, obs.finishes[1].Result)
	require.Equal(t, 2, obs.finishes[1].Attempt)
	require.Greater(t, obs.finishes[1].Fence, obs.finishes[0].Fence)
	out := logs.String()
	require.Contains(t, out, "task started")
	require.Contains(t, out, "result=retried")
	require.Contains(t, out, "result=completed")
}

// SlogObserver has kvlock.SlogObserver's shape: its zero value logs to
// slog.Default() (it used to be a function whose nil logger panicked on
// the first attempt), finishes at Level, starts at Debug, and what went
// wrong at Warn.
func TestSlogObserverLevels(t *testing.T) {
	ctx := context.Background()
	require.NotPanics(t, func() { worker.SlogObserver{}.OnStart(ctx, worker.Event{Key: "k", Kind: "job"}) })

	var logs natstest.SyncBuffer
	o := worker.SlogObserver{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), Level: slog.LevelDebug}
	var _ worker.Observer = o
	line := func(f func()) string {
		before := len(logs.String())
		f()
		return logs.String()[before:]
	}
	ev := worker.Event{Key: "k", Kind: "job", Attempt: 1, Fence: 7, Duration: time.Second}
	require.Contains(t, line(func() { o.OnStart(ctx, ev) }), `level=DEBUG msg="worker: task started" key=k kind=job attempt=1 fence=7`)
	done := ev
	done.Result = worker.ResultCompleted
	require.Contains(t, line(func() { o.OnFinish(ctx, done) }), `level=DEBUG msg="worker: task finished" key=k kind=job attempt=1 fence=7 result=completed took=1s`)
	retried := ev
	retried.Result, retried.Err, retried.RunAt = worker.ResultRetried, errors.New("boom"), time.Unix(0, 0).UTC()
	require.Contains(t, line(func() { o.OnFinish(ctx, retried) }), `level=WARN msg="worker: task finished" key=k kind=job attempt=1 fence=7 result=retried took=1s err=boom run_at=1970-01-01T00:00:00.000Z`)
	given := ev
	given.Result, given.Err = worker.ResultReleased, worker.GiveBack(errors.New("no GPU"))
	require.Contains(t, line(func() { o.OnFinish(ctx, given) }), "level=WARN")
	released := ev
	released.Result = worker.ResultReleased
	require.Contains(t, line(func() { o.OnFinish(ctx, released) }), "level=DEBUG")
}
