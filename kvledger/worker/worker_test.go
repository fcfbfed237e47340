package worker_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

func TestRunsReadyTasksInDependencyOrder(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var mu sync.Mutex
	var order []kvledger.IdempotencyKey
	e.worker(worker.Config{Concurrency: 4}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("step", func(ctx context.Context, task *worker.Task) error {
			f, ok := worker.FenceFrom(ctx)
			require.True(t, ok)
			require.Equal(t, task.Fence(), f)
			mu.Lock()
			order = append(order, task.Key())
			mu.Unlock()
			return task.SetResult(map[string]string{"by": string(task.Key())})
		}))
	})
	// c needs b needs a; admitted in reverse so only the watch can order them.
	e.submit(kvledger.Submission{Key: "c", Kind: "step", Needs: []kvledger.IdempotencyKey{"b"}})
	e.submit(kvledger.Submission{Key: "b", Kind: "step", Needs: []kvledger.IdempotencyKey{"a"}})
	e.submit(kvledger.Submission{Key: "a", Kind: "step"})
	final := e.waitFinal(10*time.Second, "a", "b", "c")
	for _, k := range []kvledger.IdempotencyKey{"a", "b", "c"} {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, k)
		require.Equal(t, 1, final[k].Attempts)
		require.JSONEq(t, `{"by":"`+string(k)+`"}`, string(final[k].Result))
	}
	mu.Lock()
	require.Equal(t, []kvledger.IdempotencyKey{"a", "b", "c"}, order)
	mu.Unlock()
}

func TestRetryBackoffMaxAttemptsPermanentPanic(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var flaky atomic.Int32
	w := e.worker(worker.Config{MaxAttempts: 3}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("flaky", func(ctx context.Context, task *worker.Task) error {
			if flaky.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		}))
		require.NoError(t, w.Handle("always", func(ctx context.Context, task *worker.Task) error {
			return errors.New("boom")
		}))
		require.NoError(t, w.Handle("permanent", func(ctx context.Context, task *worker.Task) error {
			return worker.Permanent(errors.New("bad input"))
		}))
		require.NoError(t, w.Handle("panics", func(ctx context.Context, task *worker.Task) error {
			panic("kaboom")
		}))
	})
	e.submit(kvledger.Submission{Key: "flaky", Kind: "flaky"})
	e.submit(kvledger.Submission{Key: "always", Kind: "always", MaxAttempts: 2})
	e.submit(kvledger.Submission{Key: "dep", Kind: "flaky", Needs: []kvledger.IdempotencyKey{"always"}})
	e.submit(kvledger.Submission{Key: "permanent", Kind: "permanent"})
	e.submit(kvledger.Submission{Key: "panics", Kind: "panics"})
	final := e.waitFinal(20*time.Second, "flaky", "always", "dep", "permanent", "panics")

	require.Equal(t, kvledger.StatusCompleted, final["flaky"].Status)
	require.Equal(t, 3, final["flaky"].Attempts)
	require.Equal(t, "not yet", final["flaky"].LastError, "the last failure stays on record")

	require.Equal(t, kvledger.StatusFailed, final["always"].Status)
	require.Equal(t, 2, final["always"].Attempts, "the record's MaxAttempts wins")
	require.Equal(t, "boom", final["always"].LastError)
	require.Equal(t, kvledger.StatusBlocked, final["dep"].Status)
	require.Equal(t, kvledger.IdempotencyKey("always"), final["dep"].BlockedBy)

	require.Equal(t, kvledger.StatusFailed, final["permanent"].Status)
	require.Equal(t, 1, final["permanent"].Attempts, "a permanent error is not retried")

	require.Equal(t, kvledger.StatusFailed, final["panics"].Status)
	require.Equal(t, 3, final["panics"].Attempts)
	require.Contains(t, final["panics"].LastError, "kaboom")
	require.EqualValues(t, 3, w.Stats().Panics)
	natstest.Eventually(t, 5*time.Second, func() bool { return w.Stats().Running == 0 }, "every attempt has ended")
}
