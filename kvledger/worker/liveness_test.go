package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// A worker that stops renewing (its connection is gone, as when its
// process dies) loses its task to another worker within ClaimTTL + 1s,
// and the takeover fences it.
func TestTakeoverWithinTTL(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ncA := natstest.Connect(t, n.Server)
	testTakeover(t, e, natstest.JetStream(t, ncA), 1)
}

// The same on a 3-node cluster with R3 ledger and lease buckets.
func TestTakeoverWithinTTLR3(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster run")
	}
	c := natstest.WithCluster(t, 3)
	e := newEnv(t, c.JS, 3)
	testTakeover(t, e, c.NewJS(t), 3)
}

// testTakeover: worker A, on the connection of jsA, starts a task; then
// jsA's connection closes and B must take the task over in time.
func testTakeover(t *testing.T, e *env, jsA jetstream.JetStream, replicas int) {
	const ttl = 2 * time.Second
	ledA := e.ledgerOn(jsA)
	startedA := make(chan struct{}, 1)
	var causeA atomic.Value
	var cancelledAt atomic.Int64
	a := e.startOn(jsA, ledA, worker.Config{ClaimTTL: ttl, Owner: "A", LeaseReplicas: replicas}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedA <- struct{}{}
			<-ctx.Done()
			cancelledAt.Store(time.Now().UnixNano())
			causeA.Store(context.Cause(ctx))
			return nil // would complete, but the claim is gone
		}))
	})
	e.submit(kvledger.Submission{Key: "job", Kind: "job"})
	natstest.Recv(t, startedA, 10*time.Second, "A starts the job")
	fenceA := e.state("job").Fence

	var takenAt atomic.Int64
	b := e.worker(worker.Config{ClaimTTL: ttl, Owner: "B", LeaseReplicas: replicas}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			takenAt.CompareAndSwap(0, time.Now().UnixNano())
			require.Greater(t, task.Fence(), fenceA)
			require.Equal(t, 2, task.Attempt(), "the crashed attempt counts")
			return nil
		}))
	})
	killed := time.Now()
	jsA.Conn().Close() // A can no longer renew, write or watch

	final := e.waitFinal(ttl+5*time.Second, "job")
	took := time.Duration(takenAt.Load() - killed.UnixNano())
	t.Logf("takeover %v after the worker stopped renewing (TTL %v)", took, ttl)
	require.Equal(t, kvledger.StatusCompleted, final["job"].Status)
	require.Equal(t, kvledger.OwnerID("B"), final["job"].Owner)
	require.Less(t, took, ttl+time.Second)
	require.EqualValues(t, 1, b.Stats().TakenOver)

	natstest.Eventually(t, 5*time.Second, func() bool { return causeA.Load() != nil }, "A's handler is cancelled")
	require.ErrorIs(t, causeA.Load().(error), worker.ErrClaimLost)
	// The bound of doc.go ("Never two runs of a task at once"): the lost
	// handler's context ends Margin before anyone can take the task
	// over. Measured from when the handler saw it to B's start, less
	// the time each took to run (a few ms here, more under -race on a
	// loaded machine): half of it is asserted.
	lead := time.Duration(takenAt.Load() - cancelledAt.Load())
	t.Logf("A's handler saw its context end %v before B started the task (Margin %v)", lead, kvlease.Margin(ttl))
	require.GreaterOrEqual(t, lead, kvlease.Margin(ttl)/2)
	_ = closeWorker(a) // its connection is closed: errors are expected
	require.EqualValues(t, 0, a.Stats().Completed, "A never recorded a completion")
}

// A worker whose clock is off by half the TTL, either way, keeps its
// claim for as long as it runs, and no other worker takes it over.
func TestSkewedClockKeepsClaim(t *testing.T) {
	n := natstest.WithServer(t)
	const ttl = 2 * time.Second
	for name, skew := range map[string]time.Duration{"ahead": ttl / 2, "behind": -ttl / 2} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, n.JS, 1)
			started := make(chan struct{}, 1)
			skewed := e.worker(worker.Config{ClaimTTL: ttl, Owner: "skewed", Clock: clock.Func(func() time.Time { return time.Now().Add(skew) })},
				func(w *worker.Worker) {
					require.NoError(t, w.Handle("long", func(ctx context.Context, task *worker.Task) error {
						started <- struct{}{}
						select {
						case <-time.After(2 * ttl): // outlives two TTLs: renewals must carry it
							return nil
						case <-ctx.Done():
							return context.Cause(ctx)
						}
					}))
				})
			e.submit(kvledger.Submission{Key: "long", Kind: "long"})
			natstest.Recv(t, started, 10*time.Second, "the skewed worker starts")
			other := e.worker(worker.Config{ClaimTTL: ttl, Owner: "other"}, func(w *worker.Worker) {
				require.NoError(t, w.Handle("long", func(ctx context.Context, task *worker.Task) error {
					t.Errorf("the other worker ran %q (attempt %d)", task.Key(), task.Attempt())
					return nil
				}))
			})
			final := e.waitFinal(4*ttl+5*time.Second, "long")
			require.Equal(t, kvledger.StatusCompleted, final["long"].Status)
			require.Equal(t, kvledger.OwnerID("skewed"), final["long"].Owner)
			require.Equal(t, 1, final["long"].Attempts)
			require.EqualValues(t, 0, other.Stats().TakenOver)
			require.EqualValues(t, 0, skewed.Stats().Lost)
		})
	}
}

// Delayed tasks never start before their RunAt.
func TestDelayedTasksNeverStartEarly(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	type start struct {
		key kvledger.IdempotencyKey
		at  time.Time
	}
	starts := make(chan start, 16)
	e.worker(worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("later", func(ctx context.Context, task *worker.Task) error {
			// RunAt is a wall-clock time (it is stored, and compared with
			// every worker's clock): compare wall readings, not the
			// monotonic ones, which drift from the wall clock while it is
			// adjusted (a 1.1 ms "early" start seen so under load).
			starts <- start{task.Key(), time.Now().Round(0)}
			return nil
		}))
	})
	now := time.Now().Round(0)
	runAt := map[kvledger.IdempotencyKey]time.Time{}
	for i, d := range []time.Duration{1200 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond, 0} {
		k := kvledger.IdempotencyKey(rune('a' + i))
		sub := kvledger.Submission{Key: k, Kind: "later", Now: now, Delay: d}
		if d == 0 {
			sub.RunAt = now.Add(-time.Second) // already due
		}
		e.submit(sub)
		runAt[k] = now.Add(d)
		if d == 0 {
			runAt[k] = now.Add(-time.Second)
		}
	}
	var order []kvledger.IdempotencyKey
	for range runAt {
		s := natstest.Recv(t, starts, 10*time.Second, "a delayed start")
		require.False(t, s.at.Before(runAt[s.key]), "%q started %v before its RunAt", s.key, runAt[s.key].Sub(s.at))
		t.Logf("%q started %v after its RunAt", s.key, s.at.Sub(runAt[s.key]))
		order = append(order, s.key)
	}
	require.Equal(t, []kvledger.IdempotencyKey{"d", "b", "c", "a"}, order)
}

// A delayed task comes due on the worker's Clock: advancing a manual
// clock past its RunAt starts it at once, and nothing starts before.
// The dispatcher's timer used to run on real time, so the task waited
// the whole Delay in real time whatever the Clock said.
func TestDelayedTaskStartsOnTheWorkersClock(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	clk := clock.NewManual(time.Time{})
	started := make(chan struct{}, 1)
	e.worker(worker.Config{Clock: clk}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("later", func(context.Context, *worker.Task) error {
			started <- struct{}{}
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "k", Kind: "later", Now: clk.Now(), Delay: time.Hour})
	require.Never(t, func() bool { return len(started) > 0 }, 300*time.Millisecond, 10*time.Millisecond, "started before its RunAt")
	clk.Advance(time.Hour)
	natstest.Recv(t, started, 10*time.Second, "the start once the clock passed RunAt")
}

// When a worker's lease ends (here an operator force-releases it), every
// handler running under it is cancelled with ErrClaimLost, and another
// worker takes over all its claims.
func TestWorkerLeaseEndLosesAllItsClaims(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const tasks = 3
	startedA := make(chan struct{}, tasks)
	causes := make(chan error, tasks)
	a := e.worker(worker.Config{Owner: "A", Concurrency: tasks}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			if task.Attempt() > 1 {
				return nil
			}
			startedA <- struct{}{}
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil
		}))
	})
	keys := []kvledger.IdempotencyKey{"j1", "j2", "j3"}
	for _, k := range keys {
		e.submit(kvledger.Submission{Key: k, Kind: "job"})
	}
	for range tasks {
		natstest.Recv(t, startedA, 10*time.Second, "A starts a job")
	}
	lease := e.state("j1").Lease
	require.NotEmpty(t, lease)
	var ranB atomic.Int64
	b := e.worker(worker.Config{Owner: "B"}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			ranB.Add(1)
			return nil
		}))
	})
	ctx := natstest.Context(t, 20*time.Second)
	m, err := kvlease.NewManager(ctx, e.js, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	ok, err := m.ForceReleaseKey(ctx, lease)
	require.NoError(t, err)
	require.True(t, ok)

	for range tasks {
		select {
		case c := <-causes:
			require.ErrorIs(t, c, worker.ErrClaimLost)
		case <-ctx.Done():
			t.Fatal("A's handlers were not all cancelled")
		}
	}
	// A handles the tasks too (with a fresh lease), so the takeovers
	// may be shared; together they take over all three.
	final := e.waitFinal(10*time.Second, keys...)
	for _, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status)
		require.Equal(t, 2, final[k].Attempts, "%s: the lost attempt counts", k)
	}
	require.EqualValues(t, tasks, a.Stats().TakenOver+b.Stats().TakenOver)
	// A counts a lost attempt once its handler has returned, which the
	// takeovers do not wait for.
	natstest.Eventually(t, 5*time.Second, func() bool { return a.Stats().Lost == tasks }, "A counts its claims lost")
}

// A claimed record that names no lease (written before records named
// their lease, or by a process holding the per-record lease) is judged
// by its per-record lease key: left alone while that lease is held,
// taken over once it ends.
func TestClaimWithoutLeaseIsJudgedByItsPerRecordKey(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ctx := natstest.Context(t, 30*time.Second)
	e.submit(kvledger.Submission{Key: "old", Kind: "job"})
	m, err := kvlease.NewManager(ctx, e.js, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	g, ok, err := m.TryAcquireKey(ctx, worker.LeaseKey(e.led.Store().(*kvledger.KVStore).Name(), "old"), 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	// The old format: claimed, Lease empty, written by a bare store write.
	cur := e.state("old")
	old := cur
	old.Status, old.Owner, old.Fence, old.Attempts = kvledger.StatusClaimed, "ghost", cur.Fence+1, 1
	old.LeaseUntil, old.LastEvent = time.Now().Add(time.Hour), kvledger.ClaimedEvent
	ok, err = e.led.Store().CompareAndSwap(ctx, "old", cur, old)
	require.NoError(t, err)
	require.True(t, ok)

	ran := make(chan struct{}, 1)
	w := e.worker(worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			ran <- struct{}{}
			return nil
		}))
	})
	select {
	case <-ran:
		t.Fatal("a claim whose per-record lease is held was taken over")
	case <-time.After(time.Second):
	}
	require.Equal(t, kvledger.OwnerID("ghost"), e.state("old").Owner)
	require.NoError(t, g.Release(ctx))
	natstest.Recv(t, ran, 10*time.Second, "the worker takes the claim over")
	final := e.waitFinal(10*time.Second, "old")
	require.Equal(t, kvledger.StatusCompleted, final["old"].Status)
	require.Equal(t, 2, final["old"].Attempts)
	require.EqualValues(t, 1, w.Stats().TakenOver)
}
