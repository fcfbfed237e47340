package tasks_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/tasks"
)

type flakyArgs struct{}

func (flakyArgs) Kind() string { return "flaky" }

type holdArgs struct{}

func (holdArgs) Kind() string { return "hold" }

// A task that failed twice and then succeeded shows three attempts, the
// two failures each with its own error and the success with none, on a
// ledger bucket that keeps its records' writes.
func TestClientAttemptsShowEachError(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	_, err := n.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "hist", History: 64})
	require.NoError(t, err)
	c, err := tasks.NewClient(ctx, n.JS, tasks.Config{Ledger: "hist"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close(context.Background())) })
	require.NoError(t, tasks.AddWorker(c, func(_ context.Context, tk *tasks.Task[flakyArgs]) error {
		if tk.Attempt < 3 {
			return fmt.Errorf("boom %d", tk.Attempt)
		}
		return nil
	}))
	require.NoError(t, c.Start(ctx))
	sub, err := c.Submit(ctx, flakyArgs{}, &tasks.SubmitOpts{Key: "flaky-1", MaxAttempts: 5})
	require.NoError(t, err)
	final, err := c.Wait(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, final[sub.Key].Status)

	as, err := c.Attempts(ctx, sub.Key)
	require.NoError(t, err)
	require.Len(t, as, 3, "%+v", as)
	want := []struct {
		out kvledger.AttemptOutcome
		err string
	}{{kvledger.AttemptRetried, "boom 1"}, {kvledger.AttemptRetried, "boom 2"}, {kvledger.AttemptCompleted, ""}}
	for i, a := range as {
		require.Equal(t, i+1, a.N)
		require.Equal(t, 5, a.Max)
		require.Equal(t, want[i].out, a.Outcome)
		require.Equal(t, want[i].err, a.Error)
		require.NotEmpty(t, a.Owner)
		require.False(t, a.Started.IsZero())
		require.False(t, a.Ended.Before(a.Started))
		require.Less(t, a.StartRev, a.EndRev)
	}

	none, err := c.Attempts(ctx, "no-such-task")
	require.NoError(t, err)
	require.Empty(t, none)
}

// A task that failed on its only attempt shows that attempt whole: the
// ledger bucket keeps the claim's write beside the outcome's (a bucket of
// the older one-write layout is migrated when the client opens it).
func TestClientAttemptsOfOneFailedAttempt(t *testing.T) {
	c := newClient(t, tasks.Config{MaxAttempts: 1})
	require.NoError(t, tasks.AddWorker(c, func(context.Context, *tasks.Task[flakyArgs]) error {
		return errors.New("no luck")
	}))
	ctx := natstest.Context(t, 20*time.Second)
	require.NoError(t, c.Start(ctx))
	sub, err := c.Submit(ctx, flakyArgs{}, nil)
	require.NoError(t, err)
	_, err = c.Wait(ctx, sub.Key)
	require.NoError(t, err)
	as, err := c.Attempts(ctx, sub.Key)
	require.NoError(t, err)
	require.Len(t, as, 1)
	require.Equal(t, kvledger.AttemptFailed, as[0].Outcome)
	require.Equal(t, "no luck", as[0].Error)
	require.False(t, as[0].Started.IsZero(), "the claim's write is kept")
}

// A started worker is listed idle with its kinds; running, with its
// lease's expiry and its running task, seen from another client; once it
// closes it is no longer listed.
func TestClientWorkersListsLiveWorkers(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 30*time.Second)
	runner, err := tasks.NewClient(ctx, n.JS, tasks.Config{ClaimTTL: 2 * time.Second})
	require.NoError(t, err)
	closed := false
	t.Cleanup(func() {
		if !closed {
			require.NoError(t, runner.Close(context.Background()))
		}
	})
	started, release := make(chan struct{}, 1), make(chan struct{})
	require.NoError(t, tasks.AddWorker(runner, func(ctx context.Context, _ *tasks.Task[holdArgs]) error {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}))
	require.NoError(t, runner.Start(ctx))
	watcher, err := tasks.NewClient(ctx, n.JS, tasks.Config{})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, watcher.Close(context.Background())) })

	ws, err := watcher.Workers(ctx)
	require.NoError(t, err)
	require.Len(t, ws, 1, "a started worker is listed before it claims anything")
	require.True(t, ws[0].Idle, "by its presence: it holds no claim lease yet")
	require.Equal(t, []string{"hold"}, ws[0].Kinds)
	require.Empty(t, ws[0].Tasks)

	sub, err := runner.Submit(ctx, holdArgs{}, &tasks.SubmitOpts{Key: "held"})
	require.NoError(t, err)
	natstest.Recv(t, started, 10*time.Second, "the handler to start")
	before := time.Now()
	ws, err = watcher.Workers(ctx)
	require.NoError(t, err)
	require.Len(t, ws, 1)
	w := ws[0]
	rec, _, err := runner.Get(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, rec.Owner, w.Owner)
	require.Equal(t, rec.Lease, w.Lease)
	require.Len(t, w.Tasks, 1)
	require.Equal(t, sub.Key, w.Tasks[0].Key)
	require.Equal(t, 2*time.Second, w.Holder.TTL())
	require.NotZero(t, w.Holder.Revision)
	// The server's expiry: its time of the lease's last write plus the TTL.
	require.WithinDuration(t, before.Add(2*time.Second), w.Holder.Expires, 3*time.Second)

	close(release)
	_, err = runner.Wait(ctx, sub.Key)
	require.NoError(t, err)
	closed = true
	require.NoError(t, runner.Close(ctx))
	natstest.Eventually(t, 10*time.Second, func() bool {
		ws, err := watcher.Workers(ctx)
		return err == nil && len(ws) == 0
	}, "a closed worker is no longer listed")
}
