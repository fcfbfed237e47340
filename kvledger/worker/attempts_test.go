package worker_test

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A claim lost in the task's last allowed attempt (its worker died) is
// not run again: the worker that takes it over writes it failed, with a
// new fence and a LastError that says so, and the task has run exactly
// MaxAttempts times.
func TestTakeoverAtLastAttemptFails(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const ttl = time.Second
	ncA := natstest.Connect(t, n.Server)
	jsA := natstest.JetStream(t, ncA)
	startedA := make(chan struct{}, 1)
	a := e.startOn(jsA, e.ledgerOn(jsA), worker.Config{ClaimTTL: ttl, Owner: "A"}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedA <- struct{}{}
			<-ctx.Done()
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "job", Kind: "job", MaxAttempts: 1})
	natstest.Recv(t, startedA, 10*time.Second, "A starts the only attempt")
	fenceA := e.state("job").Fence

	var ranB atomic.Int64
	obs := &recordingObserver{next: worker.SlogObserver(slog.New(slog.DiscardHandler))}
	b := e.worker(worker.Config{ClaimTTL: ttl, Owner: "B", Observer: obs}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			ranB.Add(1)
			return nil
		}))
	})
	jsA.Conn().Close() // A dies mid-attempt

	final := e.waitFinal(ttl+5*time.Second, "job")["job"]
	require.Equal(t, kvledger.StatusFailed, final.Status)
	require.Equal(t, 1, final.Attempts, "the lost attempt was the only one")
	require.Equal(t, kvledger.OwnerID("B"), final.Owner)
	require.Greater(t, final.Fence, fenceA, "the dead claimant is fenced")
	require.Contains(t, final.LastError, "attempt 1 of MaxAttempts 1 lost")
	require.Zero(t, ranB.Load(), "no attempt beyond MaxAttempts")
	natstest.Eventually(t, 5*time.Second, func() bool { return b.Stats().Failed == 1 }, "B counts the failure")
	obs.mu.Lock()
	require.Empty(t, obs.starts)
	require.Len(t, obs.finishes, 1)
	require.Equal(t, worker.ResultFailed, obs.finishes[0].Result)
	require.ErrorIs(t, obs.finishes[0].Err, kvledger.ErrAttemptsExhausted)
	obs.mu.Unlock()
	_ = closeWorker(a)
}

// A drain that releases a running task's claim tells the Observer
// (ResultReleased), once.
func TestObserverSeesDrainRelease(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	obs := &recordingObserver{next: worker.SlogObserver(slog.New(slog.DiscardHandler))}
	started := make(chan struct{}, 1)
	nc := natstest.Connect(t, n.Server)
	js := natstest.JetStream(t, nc)
	w := e.startOn(js, e.ledgerOn(js), worker.Config{Observer: obs, DrainTimeout: 50 * time.Millisecond}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("slow", func(ctx context.Context, task *worker.Task) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}))
	})
	e.submit(kvledger.Submission{Key: "slow", Kind: "slow"})
	natstest.Recv(t, started, 10*time.Second, "the handler starts")
	require.NoError(t, closeWorker(w))
	require.Equal(t, kvledger.StatusPending, e.state("slow").Status)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.finishes, 1)
	require.Equal(t, worker.ResultReleased, obs.finishes[0].Result)
	require.ErrorIs(t, obs.finishes[0].Err, worker.ErrDraining)
	require.Equal(t, kvledger.IdempotencyKey("slow"), obs.finishes[0].Key)
	require.Equal(t, 1, obs.finishes[0].Attempt)
}

// LeaseKey names the lease a worker holds while it runs a task.
func TestLeaseKeyIsTheClaimsLease(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started, finish := make(chan struct{}, 1), make(chan struct{})
	e.worker(worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			started <- struct{}{}
			<-finish
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "a.b c/ü", Kind: "job"})
	natstest.Recv(t, started, 10*time.Second, "the handler starts")
	ctx := natstest.Context(t, 10*time.Second)
	m, err := kvlease.NewManager(ctx, e.js, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	key := worker.LeaseKey(e.led.Store().(*kvledger.KVStore).Name(), "a.b c/ü")
	_, ok, err := m.TryAcquireKey(ctx, key, time.Second)
	require.NoError(t, err)
	require.False(t, ok, "the running task's lease is held")
	close(finish)
	e.waitFinal(10*time.Second, "a.b c/ü")
	natstest.Eventually(t, 10*time.Second, func() bool {
		g, ok, err := m.TryAcquireKey(ctx, key, time.Second)
		if err != nil || !ok {
			return false
		}
		return g.Release(ctx) == nil
	}, "the lease ends with the task")
}

// A pending task whose need failed without blocking it (the failing
// write's walk of the dependents was cut short) is not left waiting for
// ever: after ClaimTTL a worker claims it, and the claim blocks it.
func TestWorkerBlocksTaskTheWalkMissed(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	e.submit(kvledger.Submission{Key: "parent", Kind: "elsewhere"})
	e.submit(kvledger.Submission{Key: "child", Kind: "job", Needs: []kvledger.IdempotencyKey{"parent"}})
	// Fail the parent with a bare store write: no walk blocks the child.
	parent := e.state("parent")
	failed := parent
	failed.Status, failed.LastEvent = kvledger.StatusFailed, kvledger.CompletedEvent
	ok, err := e.led.Store().CompareAndSwap(ctx, "parent", parent, failed)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, kvledger.StatusPending, e.state("child").Status)

	var ran atomic.Int64
	e.worker(worker.Config{ClaimTTL: time.Second}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(context.Context, *worker.Task) error {
			ran.Add(1)
			return nil
		}))
	})
	child := e.waitFinal(10*time.Second, "child")["child"]
	require.Equal(t, kvledger.StatusBlocked, child.Status)
	require.Equal(t, kvledger.IdempotencyKey("parent"), child.BlockedBy)
	require.Zero(t, ran.Load())
}
