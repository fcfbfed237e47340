package worker_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A handler that gives its task back (the cause lies with the worker)
// costs the task no attempt: with one attempt allowed, the task still
// runs again and completes, and its history shows the given-back attempt
// as released, with the reason.
func TestGiveBackDoesNotCountTheAttempt(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var calls atomic.Int32
	w := e.worker(worker.Config{MaxAttempts: 1}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("host", func(ctx context.Context, task *worker.Task) error {
			if calls.Add(1) == 1 {
				return worker.GiveBack(errors.New("scratch disk missing"))
			}
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "g", Kind: "host"})
	final := e.waitFinal(10*time.Second, "g")
	require.Equal(t, kvledger.StatusCompleted, final["g"].Status, "a given-back attempt is not a failed one")
	require.Equal(t, 1, final["g"].Attempts, "only the attempt that ran counts")
	require.EqualValues(t, 2, calls.Load())
	natstest.Eventually(t, 5*time.Second, func() bool { return w.Stats().Released == 1 && w.Stats().Completed == 1 }, "released once, then completed")

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hist, err := e.led.History(ctx, "g")
	require.NoError(t, err)
	atts := kvledger.Attempts(hist)
	require.Len(t, atts, 2)
	require.Equal(t, kvledger.AttemptReleased, atts[0].Outcome)
	require.Contains(t, atts[0].Error, "scratch disk missing")
	require.Equal(t, kvledger.AttemptCompleted, atts[1].Outcome)
	require.Nil(t, worker.GiveBack(nil))
}
