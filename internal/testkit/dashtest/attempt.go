package dashtest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// RunAttempt runs one attempt of the ready task key through the task
// runtime, as a user's worker records it (the runtime's outcome protocol
// is internal to kvledger and package worker): a worker owned by owner
// handles key's kind with h until the attempt's outcome is recorded, and
// a failed attempt that is retried waits backoff. Every ready task of
// that kind is run meanwhile, so give key a kind of its own. It returns
// the record as the outcome left it.
func (e *Env) RunAttempt(t testing.TB, key, owner string, backoff time.Duration, h worker.Handler) kvledger.TaskState {
	t.Helper()
	ctx := natstest.Context(t, 20*time.Second)
	k := kvledger.IdempotencyKey(key)
	rec, found, err := e.Ledger.State(ctx, k)
	require.NoError(t, err)
	require.True(t, found, "no task %s", key)
	done := make(chan worker.Event, 1)
	w, err := worker.New(ctx, e.Node.NewJS(t), e.Ledger, worker.Config{
		Owner:    kvledger.OwnerID(owner),
		Backoff:  func(int) time.Duration { return backoff },
		Observer: attemptObserver{key: k, done: done},
	})
	require.NoError(t, err)
	require.NoError(t, w.Handle(rec.Kind, h))
	require.NoError(t, w.Start(ctx))
	ev := natstest.Recv(t, done, 15*time.Second, "the attempt of "+key+" is recorded")
	require.NoError(t, w.Close(ctx))
	require.NotEqual(t, worker.ResultLost, ev.Result, "the attempt of %s lost its claim: %v", key, ev.Err)
	rec, _, err = e.Ledger.State(ctx, k)
	require.NoError(t, err)
	return rec
}

// attemptObserver hands the first recorded attempt of key to done.
type attemptObserver struct {
	key  kvledger.IdempotencyKey
	done chan worker.Event
}

func (attemptObserver) OnStart(context.Context, worker.Event) {}

func (o attemptObserver) OnFinish(_ context.Context, e worker.Event) {
	if e.Key != o.key {
		return
	}
	select {
	case o.done <- e:
	default:
	}
}

// StartWorker starts a runtime worker owned by owner on the env's ledger,
// handling kinds with handlers that return at once, and closes it when
// the test ends. Its leases are in worker.DefaultLeaseBucket.
func (e *Env) StartWorker(t testing.TB, owner string, kinds ...string) *worker.Worker {
	t.Helper()
	ctx := natstest.Context(t, 20*time.Second)
	w, err := worker.New(ctx, e.Node.NewJS(t), e.Ledger, worker.Config{Owner: kvledger.OwnerID(owner)})
	require.NoError(t, err)
	for _, k := range kinds {
		require.NoError(t, w.Handle(k, func(context.Context, *worker.Task) error { return nil }))
	}
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(context.Background())) })
	return w
}
