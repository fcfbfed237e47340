package tasks_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

type pausedArgs struct{ Hold bool }

func (pausedArgs) Kind() string { return "paused-kind" }

// markA and markB are each handled by one of the two workers only: a
// marker that completes shows that its worker's watch delivered, and its
// producer saw, every record written before it.
type markA struct{}

func (markA) Kind() string { return "mark-a" }

type markB struct{}

func (markB) Kind() string { return "mark-b" }

// A paused kind holds across workers: two workers start none of its
// ready tasks (no claim, no attempt used) while a task of the kind that
// was running when the pause came finishes; resume starts them at once;
// Paused lists the kind while it is paused.
func TestPauseHoldsAKindAcrossWorkers(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 60*time.Second)
	started := make(chan kvledger.IdempotencyKey, 16)
	release := make(chan struct{})
	newC := func(js jetstream.JetStream, mark func(c *tasks.Client) error) *tasks.Client {
		c, err := tasks.NewClient(ctx, js, tasks.Config{})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, c.Close(context.Background())) })
		require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[pausedArgs]) error {
			started <- tk.Key
			if tk.Args.Hold {
				select {
				case <-release:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		}))
		require.NoError(t, mark(c))
		require.NoError(t, c.Start(ctx))
		return c
	}
	c1 := newC(n.JS, func(c *tasks.Client) error {
		return tasks.AddWorker(c, func(context.Context, *tasks.Task[markA]) error { return nil })
	})
	c2 := newC(n.NewJS(t), func(c *tasks.Client) error {
		return tasks.AddWorker(c, func(context.Context, *tasks.Task[markB]) error { return nil })
	})

	// A task of the kind runs when the pause comes.
	_, err := c1.Submit(ctx, pausedArgs{Hold: true}, &tasks.SubmitOpts{Key: "running"})
	require.NoError(t, err)
	require.Equal(t, kvledger.IdempotencyKey("running"), natstest.Recv(t, started, 10*time.Second, "the running task"))
	p, err := c1.Pause(ctx, "paused-kind", nil)
	require.NoError(t, err)
	require.NotZero(t, p.Rev)
	_, err = c2.Pause(ctx, "paused-kind", nil)
	require.ErrorIs(t, err, kvledger.ErrPaused)

	for _, k := range []kvledger.IdempotencyKey{"wait-1", "wait-2"} {
		_, err = c2.Submit(ctx, pausedArgs{}, &tasks.SubmitOpts{Key: k})
		require.NoError(t, err)
	}
	// The running task finishes while the kind is paused.
	close(release)
	final, err := c1.Wait(ctx, "running")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, final["running"].Status)
	// Both workers have seen the waiting tasks (markers written after
	// them completed), and neither started one.
	a, err := c1.Submit(ctx, markA{}, nil)
	require.NoError(t, err)
	b, err := c1.Submit(ctx, markB{}, nil)
	require.NoError(t, err)
	_, err = c1.Wait(ctx, a.Key, b.Key)
	require.NoError(t, err)
	select {
	case k := <-started:
		t.Fatalf("%s started while its kind was paused", k)
	default:
	}
	for _, k := range []kvledger.IdempotencyKey{"wait-1", "wait-2"} {
		rec, found, err := c2.Get(ctx, k)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, kvledger.StatusPending, rec.Status, "%s is not claimed", k)
		require.Zero(t, rec.Attempts, "%s used no attempt", k)
	}
	paused, err := c2.Paused(ctx)
	require.NoError(t, err)
	require.Len(t, paused, 1)
	require.Equal(t, "paused-kind", paused[0].Kind)
	require.Equal(t, kvledger.Actor("tasks"), paused[0].Actor)

	// Resume: they start at once, by push.
	resumed := time.Now()
	require.NoError(t, c2.Resume(ctx, "paused-kind"))
	natstest.Recv(t, started, 10*time.Second, "a task starts on resume")
	t.Logf("first start %v after Resume was called", time.Since(resumed))
	final, err = c1.Wait(ctx, "wait-1", "wait-2")
	require.NoError(t, err)
	for k, rec := range final {
		require.Equal(t, kvledger.StatusCompleted, rec.Status, k)
		require.Equal(t, 1, rec.Attempts, k)
	}
	require.ErrorIs(t, c1.Resume(ctx, "paused-kind"), kvledger.ErrNotPaused)
	paused, err = c1.Paused(ctx)
	require.NoError(t, err)
	require.Empty(t, paused)
	_, err = c1.Pause(ctx, "", nil)
	require.ErrorIs(t, err, kvledger.ErrInvalidPause)
}
