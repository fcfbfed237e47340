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

// Reopen a failed task: it runs again with a new fence, and the
// dependents it blocked (transitively) run after it.
func TestReopenUnblocksDependents(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var fail atomic.Bool
	fail.Store(true)
	e.worker(worker.Config{MaxAttempts: 1}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("root", func(ctx context.Context, task *worker.Task) error {
			if fail.Load() {
				return errors.New("broken")
			}
			return task.SetResult(42)
		}))
		require.NoError(t, w.Handle("dep", func(ctx context.Context, task *worker.Task) error {
			var v int
			for _, need := range task.Record().Needs {
				ok, err := task.NeedResult(ctx, need, &v)
				require.NoError(t, err)
				if ok {
					return task.SetResult(v + 1)
				}
			}
			return task.SetResult(0)
		}))
	})
	e.submit(kvledger.Submission{Key: "root", Kind: "root"})
	e.submit(kvledger.Submission{Key: "mid", Kind: "dep", Needs: []kvledger.IdempotencyKey{"root"}})
	e.submit(kvledger.Submission{Key: "leaf", Kind: "dep", Needs: []kvledger.IdempotencyKey{"mid"}})
	final := e.waitFinal(10*time.Second, "root", "mid", "leaf")
	require.Equal(t, kvledger.StatusFailed, final["root"].Status)
	require.Equal(t, kvledger.StatusBlocked, final["leaf"].Status)
	oldFence := final["root"].Fence

	fail.Store(false)
	ctx := natstest.Context(t, 10*time.Second)
	rec, err := e.led.Reopen(ctx, "operator", "root", time.Now())
	require.NoError(t, err)
	require.Greater(t, rec.Fence, oldFence)
	require.Equal(t, kvledger.StatusPending, rec.Status)
	_, err = e.led.Reopen(ctx, "operator", "mid", time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotFailed)

	natstest.Eventually(t, 10*time.Second, func() bool {
		return e.state("leaf").Status == kvledger.StatusCompleted
	}, "the whole chain runs after Reopen")
	require.JSONEq(t, "42", string(e.state("root").Result))
	require.JSONEq(t, "43", string(e.state("mid").Result))
	require.JSONEq(t, "44", string(e.state("leaf").Result))
}

// Cancel a running task: its handler's context ends with ErrCancelled,
// the record is failed (Cancelled) and its dependents are blocked; a
// pending task can be cancelled too; Delete removes a final record.
func TestCancelAndDelete(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started := make(chan struct{}, 1)
	cause := make(chan error, 1)
	w := e.worker(worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("long", func(ctx context.Context, task *worker.Task) error {
			started <- struct{}{}
			<-ctx.Done()
			cause <- context.Cause(ctx)
			return ctx.Err()
		}))
	})
	e.submit(kvledger.Submission{Key: "long", Kind: "long"})
	e.submit(kvledger.Submission{Key: "after", Kind: "long", Needs: []kvledger.IdempotencyKey{"long"}})
	e.submit(kvledger.Submission{Key: "later", Kind: "long", Delay: time.Hour})
	natstest.Recv(t, started, 10*time.Second, "the handler starts")

	ctx := natstest.Context(t, 10*time.Second)
	_, err := e.led.Cancel(ctx, "operator", "long", "no longer wanted", time.Now())
	require.NoError(t, err)
	require.ErrorIs(t, natstest.Recv(t, cause, 5*time.Second, "the handler's ctx ends"), worker.ErrCancelled)
	_, err = e.led.Cancel(ctx, "operator", "later", "", time.Now())
	require.NoError(t, err)

	final := e.waitFinal(5*time.Second, "long", "after", "later")
	require.True(t, final["long"].Cancelled)
	require.Equal(t, "no longer wanted", final["long"].LastError)
	require.Equal(t, kvledger.StatusBlocked, final["after"].Status)
	require.Equal(t, kvledger.StatusFailed, final["later"].Status)
	natstest.Eventually(t, 5*time.Second, func() bool { return w.Stats().Cancelled == 1 }, "counted as cancelled")

	_, err = e.led.Cancel(ctx, "operator", "long", "", time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotCancellable)
	require.NoError(t, e.led.Delete(ctx, "operator", "after", time.Now()))
	_, found, err := e.led.State(ctx, "after")
	require.NoError(t, err)
	require.False(t, found)
	require.ErrorIs(t, e.led.Delete(ctx, "operator", "after", time.Now()), kvledger.ErrNoKey)
}
