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
	obs := &recordingObserver{next: worker.SlogObserver(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))}
	w := e.worker(worker.Config{Observer: obs, MaxAttempts: 2}, func(w *worker.Worker) {
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
