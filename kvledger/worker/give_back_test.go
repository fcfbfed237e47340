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

// A handler that gives its task back twice for the same cause shows that
// cause on both attempts: the second release carries the same text as
// the claim before it (which carried the first release's error along),
// yet it is the error that attempt gave back, in the record's history
// (Attempts) and in its events (AttemptsOf) alike.
func TestGiveBackTwiceWithTheSameErrorShowsItTwice(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var calls atomic.Int32
	e.worker(worker.Config{MaxAttempts: 1}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("host", func(ctx context.Context, task *worker.Task) error {
			if calls.Add(1) <= 2 {
				return worker.GiveBack(errors.New("disk full"))
			}
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "g2", Kind: "host"})
	final := e.waitFinal(10*time.Second, "g2")
	require.Equal(t, kvledger.StatusCompleted, final["g2"].Status)
	require.EqualValues(t, 3, calls.Load())

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hist, err := e.led.History(ctx, "g2")
	require.NoError(t, err)
	evs, err := e.led.KeyEvents(ctx, "g2")
	require.NoError(t, err)
	for name, atts := range map[string][]kvledger.Attempt{"Attempts": kvledger.Attempts(hist), "AttemptsOf": kvledger.AttemptsOf(evs)} {
		require.Len(t, atts, 3, name)
		for i, a := range atts[:2] {
			require.Equal(t, kvledger.AttemptReleased, a.Outcome, "%s: attempt %d", name, i)
			require.Equal(t, "given back: disk full", a.Error, "%s: attempt %d gave back its own error", name, i)
		}
		require.Equal(t, kvledger.AttemptCompleted, atts[2].Outcome, name)
		require.Empty(t, atts[2].Error, name)
	}
}
