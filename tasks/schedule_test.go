package tasks_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

// A schedule declared through the client runs on the client's worker with
// its arguments exact (integers beyond 2^53); Replace changes it by
// revision, Unschedule removes it, and bad specs are refused.
func TestClientSchedule(t *testing.T) {
	c := newClient(t, tasks.Config{})
	var (
		mu  sync.Mutex
		got []bigArgs
	)
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[bigArgs]) error {
		mu.Lock()
		got = append(got, tk.Args)
		mu.Unlock()
		return nil
	}))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))

	for _, spec := range []string{"0 0 31 2 *", "61 * * * *", "@every 1ms", "@sometimes", ""} {
		_, err := c.Schedule(ctx, "bad", spec, bigArgs{}, nil)
		require.ErrorIs(t, err, kvledger.ErrInvalidSchedule, spec)
	}
	_, err := c.Schedule(ctx, "bad", "@daily", bigArgs{}, &tasks.ScheduleOpts{TimeZone: "Nowhere/Land"})
	require.ErrorIs(t, err, kvledger.ErrInvalidSchedule)
	_, err = c.Schedule(ctx, "bad", "@daily", noKind{}, nil)
	require.ErrorIs(t, err, tasks.ErrInvalidArgs)

	want := bigArgs{ID: 1<<64 - 1, Neg: -1 << 63, Ratio: 0.1, Blob: []byte{0, 255}}
	sc, err := c.Schedule(ctx, "big", "@daily", bigArgs{}, nil)
	require.NoError(t, err)
	_, err = c.Schedule(ctx, "big", "@every 1s", want, nil)
	require.ErrorIs(t, err, kvledger.ErrScheduleExists)
	replaced, err := c.Schedule(ctx, "big", "@every 1s", want, &tasks.ScheduleOpts{Replace: true, MaxAttempts: 1})
	require.NoError(t, err)
	require.Greater(t, replaced.Rev, sc.Rev)

	natstest.Eventually(t, 20*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0
	}, "a period ran")
	mu.Lock()
	require.Equal(t, want, got[0])
	mu.Unlock()

	list, err := c.Schedules(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, "@every 1s", list[0].Spec)
	now := time.Now()
	next := list[0].Next(now)
	require.False(t, next.Before(now), "the next period starts after now")
	require.LessOrEqual(t, next.Sub(now), time.Second, "within one period of @every 1s")
	require.NoError(t, c.Unschedule(ctx, "big"))
	require.ErrorIs(t, c.Unschedule(ctx, "big"), kvledger.ErrNoSchedule)
}
