package tasks_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
	"github.com/natscoord/natscoord/tasks"
)

// events is an Observer that keeps every finished attempt.
type events struct {
	mu  sync.Mutex
	evs []worker.Event
	at  []time.Time // when each was observed
}

func (o *events) OnStart(context.Context, worker.Event) {}
func (o *events) OnFinish(_ context.Context, e worker.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.evs = append(o.evs, e)
	o.at = append(o.at, time.Now())
}

func (o *events) results() []worker.Result {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []worker.Result
	for _, e := range o.evs {
		out = append(out, e.Result)
	}
	return out
}

// Config's Backoff knobs, its Observer and its Logger reach the worker:
// with BackoffBase 1ms a retry waits a millisecond, not the default
// second; the Observer sees every attempt; the Logger writes one line
// per failed attempt, as its doc says.
func TestConfigBackoffObserverLogger(t *testing.T) {
	var logs natstest.SyncBuffer
	obs := &events{}
	c := newClient(t, tasks.Config{
		BackoffBase: time.Millisecond, BackoffMax: time.Millisecond,
		Observer: obs,
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[failArgs]) error {
		if tk.Args.Permanent {
			return tasks.Permanent(errors.New("boom for good"))
		}
		return errors.New("boom")
	}))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))
	retried, err := c.Submit(ctx, failArgs{}, &tasks.SubmitOpts{Key: "retried"})
	require.NoError(t, err)
	final, err := c.Wait(ctx, retried.Key)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, final[retried.Key].Status)
	perm, err := c.Submit(ctx, failArgs{Permanent: true}, &tasks.SubmitOpts{Key: "permanent"})
	require.NoError(t, err)
	_, err = c.Wait(ctx, perm.Key)
	require.NoError(t, err)

	natstest.Eventually(t, 10*time.Second, func() bool { return len(obs.results()) == 4 }, "four attempts observed")
	require.Equal(t, []worker.Result{worker.ResultRetried, worker.ResultRetried, worker.ResultFailed, worker.ResultFailed}, obs.results())
	obs.mu.Lock()
	for i, e := range obs.evs[:2] {
		// The default backoff would put the next attempt 0.5 s or more ahead.
		require.Less(t, e.RunAt.Sub(obs.at[i]), 250*time.Millisecond, "retry %d's pause", i+1)
	}
	obs.mu.Unlock()

	natstest.Eventually(t, 10*time.Second, func() bool { return strings.Count(logs.String(), "worker: attempt ") == 4 }, "one log line per failed attempt:\n%s", logs.String())
	out := logs.String()
	require.Equal(t, 2, strings.Count(out, `level=WARN msg="worker: attempt retried" key=retried`), out)
	require.Contains(t, out, `level=ERROR msg="worker: attempt failed" key=retried kind=fail attempt=3`)
	require.Contains(t, out, `level=ERROR msg="worker: attempt failed" key=permanent kind=fail attempt=1`)
	require.Contains(t, out, `err="permanent: boom for good"`)
}

// Config.Backoff, when set, decides each pause.
func TestConfigBackoffFunc(t *testing.T) {
	var (
		mu    sync.Mutex
		asked []int
	)
	c := newClient(t, tasks.Config{MaxAttempts: 3, Backoff: func(n int) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, n)
		return 0
	}})
	require.NoError(t, tasks.AddWorker(c, func(context.Context, *tasks.Task[failArgs]) error { return errors.New("boom") }))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))
	sub, err := c.Submit(ctx, failArgs{}, nil)
	require.NoError(t, err)
	_, err = c.Wait(ctx, sub.Key)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []int{1, 2}, asked)
}

// The effective attempt limit is what the record, Attempts and the
// handler's Task show: 3 by default, not 0.
func TestEffectiveMaxAttemptsShown(t *testing.T) {
	c := newClient(t, tasks.Config{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	seen := make(chan int, 3)
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[failArgs]) error {
		select {
		case seen <- tk.MaxAttempts:
		default:
		}
		return errors.New("boom")
	}))
	ctx := natstest.Context(t, 30*time.Second)
	sub, err := c.Submit(ctx, failArgs{}, nil)
	require.NoError(t, err)
	rec, found, err := c.Ledger().State(ctx, sub.Key)
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, 3, rec.MaxAttempts, "the record states the limit that bounds it")

	require.NoError(t, c.Start(ctx))
	final, err := c.Wait(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, 3, final[sub.Key].Attempts)
	require.Equal(t, 3, natstest.Recv(t, seen, time.Second, "Task.MaxAttempts"))
	as, err := c.Attempts(ctx, sub.Key)
	require.NoError(t, err)
	require.Len(t, as, 3)
	for _, a := range as {
		require.Equal(t, 3, a.Max, "attempt %d", a.N)
	}

	// A record admitted without a limit by another client (the CLI's
	// `ledger admit`) shows the client's default in Attempts.
	ok, err := c.Ledger().Submit(ctx, "cli", kvledger.Submission{Key: "bare", Kind: "fail", Seq: 1})
	require.NoError(t, err)
	require.True(t, ok)
	final, err = c.Wait(ctx, "bare")
	require.NoError(t, err)
	require.Equal(t, 0, final["bare"].MaxAttempts)
	as, err = c.Attempts(ctx, "bare")
	require.NoError(t, err)
	require.Len(t, as, 3)
	require.Equal(t, 3, as[0].Max)
}

// A Config whose controls are out of range is refused before anything
// runs.
func TestConfigControlsRefused(t *testing.T) {
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 10*time.Second)
	for name, cfg := range map[string]tasks.Config{
		"negative timeout":       {Timeout: -time.Second},
		"negative snoozes":       {MaxSnoozes: -1},
		"backoff base above max": {BackoffBase: time.Hour, BackoffMax: time.Second},
	} {
		c, err := tasks.NewClient(ctx, n.JS, cfg)
		require.ErrorIs(t, err, worker.ErrInvalidConfig, name)
		require.Nil(t, c, name)
	}
}
