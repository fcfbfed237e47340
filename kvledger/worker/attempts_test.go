package worker_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
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
	obs := &recordingObserver{next: worker.SlogObserver{Logger: slog.New(slog.DiscardHandler)}}
	b := e.worker(worker.Config{ClaimTTL: ttl, Owner: "B", Observer: obs}, func(w *worker.Worker) {
		obs.watch(w)
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
	require.Empty(t, obs.countedFirst, "counted before observed")
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
	obs := &recordingObserver{next: worker.SlogObserver{Logger: slog.New(slog.DiscardHandler)}}
	started := make(chan struct{}, 1)
	nc := natstest.Connect(t, n.Server)
	js := natstest.JetStream(t, nc)
	w := e.startOn(js, e.ledgerOn(js), worker.Config{Observer: obs, DrainTimeout: 50 * time.Millisecond}, func(w *worker.Worker) {
		obs.watch(w)
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
	require.Empty(t, obs.countedFirst, "counted before observed")
	require.Len(t, obs.finishes, 1)
	require.Equal(t, worker.ResultReleased, obs.finishes[0].Result)
	require.ErrorIs(t, obs.finishes[0].Err, worker.ErrDraining)
	require.Equal(t, kvledger.IdempotencyKey("slow"), obs.finishes[0].Key)
	require.Equal(t, 1, obs.finishes[0].Attempt)
}

// All the claims a worker has in flight name one lease, the worker's:
// the lease bucket holds exactly one key for them, held while they run,
// and each record's Lease is cleared by its outcome.
func TestClaimsNameTheWorkersLease(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const tasks = 4
	started, finish := make(chan struct{}, tasks), make(chan struct{})
	e.worker(worker.Config{Concurrency: tasks}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			started <- struct{}{}
			<-finish
			return nil
		}))
	})
	keys := make([]kvledger.IdempotencyKey, tasks)
	for i := range keys {
		keys[i] = kvledger.IdempotencyKey(fmt.Sprintf("a.b c/ü %d", i))
		e.submit(kvledger.Submission{Key: keys[i], Kind: "job"})
	}
	for range tasks {
		natstest.Recv(t, started, 10*time.Second, "a handler starts")
	}
	ctx := natstest.Context(t, 20*time.Second)
	bucket := e.led.Store().(*kvledger.KVStore).Name()
	lease := e.state(keys[0]).Lease
	require.True(t, strings.HasPrefix(lease, strings.TrimSuffix(worker.LeaseKey(bucket, "x"), "x")+"w."), "lease key %q", lease)
	for _, k := range keys {
		require.Equal(t, lease, e.state(k).Lease, "record %q names the worker's lease", k)
	}
	require.Equal(t, []string{lease}, e.leaseKeys(), "one lease key for %d claims", tasks)
	m, err := kvlease.NewManager(ctx, e.js, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	_, ok, err := m.HolderOfKey(ctx, lease)
	require.NoError(t, err)
	require.True(t, ok, "the worker's lease is held")
	close(finish)
	final := e.waitFinal(10*time.Second, keys...)
	for _, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status)
		require.Empty(t, final[k].Lease, "the outcome clears the record's lease")
	}
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
