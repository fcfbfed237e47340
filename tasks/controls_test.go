package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/tasks"
)

type slowArgs struct{}

func (slowArgs) Kind() string { return "slow" }

// A task's Timeout ends its handler's ctx with cause ErrTimeout; the
// attempt fails with that error and is retried by the usual rule. The
// task stays claimed until the handler has returned, however long after
// its timeout. The timeout is stored in the record; Config.Timeout is
// the default a submission stores.
func TestTimeout(t *testing.T) {
	c := newClient(t, tasks.Config{MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond,
		Timeout: 40 * time.Millisecond})
	timedOut := make(chan int, 2)
	release := make(chan struct{})
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[slowArgs]) error {
		<-ctx.Done()
		if !errors.Is(context.Cause(ctx), tasks.ErrTimeout) {
			return context.Cause(ctx)
		}
		timedOut <- tk.Attempt
		if tk.Attempt == 1 {
			<-release // a handler slow to stop keeps its claim
		}
		return ctx.Err()
	}))
	ctx := natstest.Context(t, 30*time.Second)
	sub, err := c.Submit(ctx, slowArgs{}, &tasks.SubmitOpts{Timeout: 100 * time.Millisecond})
	require.NoError(t, err)
	rec, _, err := c.Get(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, 100, rec.TimeoutMS, "stored, so every worker obeys it")
	other, err := c.Submit(ctx, failArgs{}, nil)
	require.NoError(t, err)
	rec, _, err = c.Get(ctx, other.Key)
	require.NoError(t, err)
	require.Equal(t, 40, rec.TimeoutMS, "Config.Timeout is the default")

	require.NoError(t, c.Start(ctx))
	require.Equal(t, 1, natstest.Recv(t, timedOut, 10*time.Second, "the first attempt times out"))
	rec, _, err = c.Get(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusClaimed, rec.Status, "still claimed while its handler runs")
	require.Equal(t, 1, rec.Attempts)
	close(release)
	require.Equal(t, 2, natstest.Recv(t, timedOut, 10*time.Second, "the retry times out too"))
	final, err := c.Wait(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, final[sub.Key].Status)
	require.Equal(t, 2, final[sub.Key].Attempts)
	require.Contains(t, final[sub.Key].LastError, "worker: task timed out after 100ms: context canceled")
	as, err := c.Attempts(ctx, sub.Key)
	require.NoError(t, err)
	require.Len(t, as, 2)
	require.Equal(t, kvledger.AttemptRetried, as[0].Outcome)
	require.Contains(t, as[0].Error, "timed out after 100ms")
}

// Snooze runs the task again after its pause without counting the
// attempt; a task snoozed MaxSnoozes times fails at its next snooze.
func TestSnooze(t *testing.T) {
	obs := &events{}
	c := newClient(t, tasks.Config{MaxSnoozes: 3, Observer: obs})
	calls := make(chan int, 16)
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[failArgs]) error {
		calls <- tk.Attempt
		if tk.Args.Permanent || tk.Record().Snoozes < 2 {
			return tasks.Snooze(5 * time.Millisecond)
		}
		return nil
	}))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))
	sub, err := c.Submit(ctx, failArgs{}, &tasks.SubmitOpts{MaxAttempts: 1})
	require.NoError(t, err)
	final, err := c.Wait(ctx, sub.Key)
	require.NoError(t, err)
	rec := final[sub.Key]
	require.Equal(t, kvledger.StatusCompleted, rec.Status, rec.LastError)
	require.Equal(t, 1, rec.Attempts, "snoozes use no attempt: MaxAttempts 1 was enough")
	require.Equal(t, 2, rec.Snoozes)
	for range 3 {
		require.Equal(t, 1, natstest.Recv(t, calls, time.Second, "each run is attempt 1"))
	}
	h, err := c.Ledger().History(ctx, sub.Key)
	require.NoError(t, err)
	var snoozed int
	for _, s := range h {
		if s.LastEvent == kvledger.SnoozedEvent {
			snoozed++
		}
	}
	require.Equal(t, 2, snoozed)
	natstest.Eventually(t, 5*time.Second, func() bool { return len(obs.results()) == 3 }, "three attempts observed")
	require.Equal(t, []worker.Result{worker.ResultSnoozed, worker.ResultSnoozed, worker.ResultCompleted}, obs.results())

	// The bound: the fourth snooze fails the task.
	forever, err := c.Submit(ctx, failArgs{Permanent: true}, nil)
	require.NoError(t, err)
	final, err = c.Wait(ctx, forever.Key)
	require.NoError(t, err)
	rec = final[forever.Key]
	require.Equal(t, kvledger.StatusFailed, rec.Status)
	require.Equal(t, 3, rec.Snoozes)
	require.Contains(t, rec.LastError, worker.ErrSnoozeLimit.Error())
}
