package tasks_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

type nowArgs struct{ Fail bool }

func (nowArgs) Kind() string { return "now" }

// RunNow starts a scheduled task and a retrying one at once, the
// retrying one's attempts unchanged; a task already due is not written,
// an ended one is refused, a missing key is ErrNotFound.
func TestRunNow(t *testing.T) {
	c := newClient(t, tasks.Config{BackoffBase: time.Hour, BackoffMax: time.Hour})
	ran := make(chan int, 4)
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[nowArgs]) error {
		ran <- tk.Attempt
		if tk.Args.Fail && tk.Attempt == 1 {
			return errors.New("first attempt fails")
		}
		return nil
	}))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))

	sched, err := c.Submit(ctx, nowArgs{}, &tasks.SubmitOpts{Key: "later", Delay: time.Hour})
	require.NoError(t, err)
	retry, err := c.Submit(ctx, nowArgs{Fail: true}, &tasks.SubmitOpts{Key: "retry"})
	require.NoError(t, err)
	require.Equal(t, 1, natstest.Recv(t, ran, 10*time.Second, "the first attempt"))
	natstest.Eventually(t, 10*time.Second, func() bool {
		rec, _, err := c.Get(ctx, retry.Key)
		return err == nil && rec.Phase(time.Now()) == kvledger.PhaseRetrying
	}, "the failed task waits out its hour of backoff")
	rec, _, err := c.Get(ctx, sched.Key)
	require.NoError(t, err)
	require.Equal(t, kvledger.PhaseScheduled, rec.Phase(time.Now()))

	require.NoError(t, c.RunNow(ctx, sched.Key, retry.Key))
	final, err := c.Wait(ctx, sched.Key, retry.Key)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, final[sched.Key].Status)
	require.Equal(t, 1, final[sched.Key].Attempts)
	require.Equal(t, kvledger.StatusCompleted, final[retry.Key].Status)
	require.Equal(t, 2, final[retry.Key].Attempts, "run now keeps the attempts used")
	as, err := c.Attempts(ctx, retry.Key)
	require.NoError(t, err)
	require.Len(t, as, 2)
	require.Equal(t, kvledger.AttemptRetried, as[0].Outcome)

	// Ended: refused, and nothing written.
	err = c.RunNow(ctx, sched.Key)
	require.ErrorIs(t, err, kvledger.ErrNotDelayed)
	after, _, err := c.Get(ctx, sched.Key)
	require.NoError(t, err)
	require.Equal(t, final[sched.Key].Rev, after.Rev)
	require.ErrorIs(t, c.RunNow(ctx, "no-such-task"), tasks.ErrNotFound)
}

// A pending task that is due already is left as it is: no write.
func TestRunNowDueWritesNothing(t *testing.T) {
	c := newClient(t, tasks.Config{})
	ctx := natstest.Context(t, 10*time.Second)
	sub, err := c.Submit(ctx, nowArgs{}, nil)
	require.NoError(t, err)
	before, _, err := c.Get(ctx, sub.Key)
	require.NoError(t, err)
	require.NoError(t, c.RunNow(ctx, sub.Key))
	after, _, err := c.Get(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, before.Rev, after.Rev)
	require.Equal(t, kvledger.AdmittedEvent, after.LastEvent)
}
