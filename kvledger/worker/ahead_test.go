package worker_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvlease"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// gatedHandler registers kind with a handler that reports each start on started
// and returns when gate is sent to (or its context ends).
func gatedHandler(t *testing.T, kind string, started chan<- kvledger.IdempotencyKey, gate <-chan struct{}) func(*worker.Worker) {
	return func(w *worker.Worker) {
		require.NoError(t, w.Handle(kind, func(ctx context.Context, task *worker.Task) error {
			started <- task.Key()
			select {
			case <-gate:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}))
	}
}

// claimedBy reports whether k is claimed by owner.
func (e *env) claimedBy(k kvledger.IdempotencyKey, owner kvledger.OwnerID) bool {
	s := e.state(k)
	return s.Status == kvledger.StatusClaimed && s.Owner == owner
}

// While its one handler runs, a worker claims the next ready tasks (up to
// ClaimAhead) under its one lease, and the handler slot that frees up
// goes to the claimed task of the highest priority, whatever order they
// were claimed in.
func TestClaimAheadStartsByPriority(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started, gate := make(chan kvledger.IdempotencyKey, 4), make(chan struct{})
	w := e.worker(worker.Config{Concurrency: 1, ClaimAhead: 2}, gatedHandler(t, "k", started, gate))
	e.submit(kvledger.Submission{Key: "a", Kind: "k"})
	require.Equal(t, kvledger.IdempotencyKey("a"), natstest.Recv(t, started, 10*time.Second, "a starts"))
	e.submit(kvledger.Submission{Key: "low", Kind: "k", Priority: 1})
	e.submit(kvledger.Submission{Key: "high", Kind: "k", Priority: 5})
	e.submit(kvledger.Submission{Key: "beyond", Kind: "k"})
	natstest.Eventually(t, 10*time.Second, func() bool {
		return e.claimedBy("low", w.Owner()) && e.claimedBy("high", w.Owner())
	}, "claimed ahead while a runs")
	// The ledger shows a claim before its answer reaches the worker: wait
	// for both to queue, or the slot may go to the only one queued yet.
	natstest.Eventually(t, 10*time.Second, func() bool { return worker.Ahead(w) == 2 }, "both wait for the handler slot")
	require.Equal(t, e.state("a").Lease, e.state("high").Lease, "claimed under the worker's one lease")
	require.Equal(t, kvledger.StatusPending, e.state("beyond").Status, "beyond the window")
	require.EqualValues(t, 1, w.Stats().Started)

	gate <- struct{}{}
	require.Equal(t, kvledger.IdempotencyKey("high"), natstest.Recv(t, started, 10*time.Second, "the next start"))
	gate <- struct{}{}
	require.Equal(t, kvledger.IdempotencyKey("low"), natstest.Recv(t, started, 10*time.Second, "the next start"))
	gate <- struct{}{}
	require.Equal(t, kvledger.IdempotencyKey("beyond"), natstest.Recv(t, started, 10*time.Second, "the last start"))
	gate <- struct{}{}
	for k, s := range e.waitFinal(10*time.Second, "a", "low", "high", "beyond") {
		require.Equal(t, kvledger.StatusCompleted, s.Status, "%s", k)
		require.Equal(t, 1, s.Attempts, "%s", k)
	}
}

// Close gives the tasks claimed ahead back at once (pending, the attempt
// not counted), while the running handler still has its drain time, and
// another worker runs them.
func TestClaimAheadGivenBackOnClose(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started, gate := make(chan kvledger.IdempotencyKey, 4), make(chan struct{})
	w := e.worker(worker.Config{Concurrency: 1, ClaimAhead: 2, DrainTimeout: 20 * time.Second}, gatedHandler(t, "k", started, gate))
	e.submit(kvledger.Submission{Key: "a", Kind: "k"})
	natstest.Recv(t, started, 10*time.Second, "a starts")
	e.submit(kvledger.Submission{Key: "b", Kind: "k"})
	e.submit(kvledger.Submission{Key: "c", Kind: "k"})
	natstest.Eventually(t, 10*time.Second, func() bool {
		return e.claimedBy("b", w.Owner()) && e.claimedBy("c", w.Owner())
	}, "claimed ahead")

	closed := make(chan error, 1)
	// Should an assertion below fail first, the gate still opens, so the
	// closing goroutine is not left waiting out the drain.
	t.Cleanup(func() {
		select {
		case gate <- struct{}{}:
		default:
		}
	})
	go func() { closed <- closeWorker(w) }()
	natstest.Eventually(t, 10*time.Second, func() bool {
		b, c := e.state("b"), e.state("c")
		return b.Status == kvledger.StatusPending && c.Status == kvledger.StatusPending
	}, "given back before the drain ends")
	for _, k := range []kvledger.IdempotencyKey{"b", "c"} {
		s := e.state(k)
		require.Equal(t, 0, s.Attempts, "%s: the attempt is not counted", k)
		require.Equal(t, kvledger.ReleasedEvent, s.LastEvent, "%s", k)
	}
	require.True(t, e.claimedBy("a", w.Owner()), "a's handler still runs")
	gate <- struct{}{}
	require.NoError(t, natstest.Recv(t, closed, 20*time.Second, "Close returns"))
	require.Equal(t, kvledger.StatusCompleted, e.state("a").Status)
	require.EqualValues(t, 2, w.Stats().Released)

	e.worker(worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("k", func(context.Context, *worker.Task) error { return nil }))
	})
	for k, s := range e.waitFinal(10*time.Second, "b", "c") {
		require.Equal(t, kvledger.StatusCompleted, s.Status, "%s", k)
		require.Equal(t, 1, s.Attempts, "%s", k)
	}
}

// A task cancelled while it waits, claimed ahead, for a handler slot
// never runs: its wait ends with the cancellation, and the slot goes to
// the next task.
func TestClaimAheadCancelledWhileWaiting(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	obs := &recordingObserver{next: worker.SlogObserver{Logger: slog.New(slog.DiscardHandler)}}
	started, gate := make(chan kvledger.IdempotencyKey, 4), make(chan struct{})
	w := e.worker(worker.Config{Concurrency: 1, ClaimAhead: 1, Observer: obs}, func(w *worker.Worker) {
		obs.watch(w)
		gatedHandler(t, "k", started, gate)(w)
	})
	e.submit(kvledger.Submission{Key: "a", Kind: "k"})
	natstest.Recv(t, started, 10*time.Second, "a starts")
	e.submit(kvledger.Submission{Key: "b", Kind: "k"})
	natstest.Eventually(t, 10*time.Second, func() bool { return e.claimedBy("b", w.Owner()) }, "b claimed ahead")
	_, err := e.led.Cancel(natstest.Context(t, 5*time.Second), "operator", "b", "not wanted", time.Now())
	require.NoError(t, err)
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Cancelled == 1 }, "b's wait ends")
	e.submit(kvledger.Submission{Key: "c", Kind: "k"})
	gate <- struct{}{}
	require.Equal(t, kvledger.IdempotencyKey("c"), natstest.Recv(t, started, 10*time.Second, "c, not b, runs next"))
	gate <- struct{}{}
	final := e.waitFinal(10*time.Second, "a", "b", "c")
	require.True(t, final["b"].Cancelled)
	require.Equal(t, kvledger.StatusCompleted, final["c"].Status)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Empty(t, obs.countedFirst, "counted before observed")
	for _, s := range obs.starts {
		require.NotEqual(t, kvledger.IdempotencyKey("b"), s.Key, "b never started")
	}
}

// Claims ahead count against KindConcurrency and GroupLimits: a kind or
// group at its limit gets none, while other tasks go on.
func TestClaimAheadRespectsLimits(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started, gate := make(chan kvledger.IdempotencyKey, 8), make(chan struct{})
	w := e.worker(worker.Config{Concurrency: 4, ClaimAhead: 4, KindConcurrency: map[string]int{"one": 1}, GroupLimits: map[string]int{"g": 1}},
		func(w *worker.Worker) {
			gatedHandler(t, "one", started, gate)(w)
			gatedHandler(t, "grouped", started, gate)(w)
			require.NoError(t, w.Handle("quick", func(context.Context, *worker.Task) error { return nil }))
		})
	for i := range 3 {
		e.submit(kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("one%d", i)), Kind: "one"})
		e.submit(kvledger.Submission{Key: kvledger.IdempotencyKey(fmt.Sprintf("g%d", i)), Kind: "grouped", Group: "g"})
	}
	natstest.Recv(t, started, 10*time.Second, "one task of the kind starts")
	natstest.Recv(t, started, 10*time.Second, "one task of the group starts")
	// A later task runs to the end: the dispatcher has looked at the
	// limited ones since they were admitted.
	e.submit(kvledger.Submission{Key: "quick", Kind: "quick"})
	e.waitFinal(10*time.Second, "quick")
	claimed := map[string]int{}
	for i := range 3 {
		for _, p := range []string{"one", "g"} {
			if e.claimedBy(kvledger.IdempotencyKey(fmt.Sprintf("%s%d", p, i)), w.Owner()) {
				claimed[p]++
			}
		}
	}
	require.Equal(t, map[string]int{"one": 1, "g": 1}, claimed, "no claim ahead beyond a kind's or a group's limit")
	for range 4 {
		gate <- struct{}{}
		natstest.Recv(t, started, 10*time.Second, "the next one starts")
	}
	close(gate)
	e.waitFinal(10*time.Second, "one0", "one1", "one2", "g0", "g1", "g2")
}

// Outcomes are sent without the attempt waiting for them and collected by
// the worker: every one lands, a retry's next claim comes after its
// retry outcome (per-key order), and none is counted lost.
func TestPipelinedOutcomesAllLand(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	const count = 120
	w := e.worker(worker.Config{Concurrency: 4, Backoff: func(int) time.Duration { return 0 }}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("k", func(_ context.Context, task *worker.Task) error {
			if task.Priority() == 1 && task.Attempt() == 1 {
				return errors.New("once more")
			}
			return task.SetResult(string(task.Key()))
		}))
	})
	subs := make([]kvledger.Submission, 0, count)
	keys := make([]kvledger.IdempotencyKey, 0, count)
	for i := range count {
		k := kvledger.IdempotencyKey(fmt.Sprintf("t%d", i))
		subs = append(subs, kvledger.Submission{Key: k, Seq: 1, Kind: "k", Priority: i % 2})
		keys = append(keys, k)
	}
	_, err := e.led.AdmitMany(natstest.Context(t, 10*time.Second), "test", subs)
	require.NoError(t, err)
	final := e.waitFinal(30*time.Second, keys...)
	for i, k := range keys {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, "%s", k)
		require.Equal(t, 1+i%2, final[k].Attempts, "%s", k)
		require.JSONEq(t, fmt.Sprintf("%q", k), string(final[k].Result))
	}
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Completed == count }, "every outcome collected")
	st := w.Stats()
	require.EqualValues(t, count/2, st.Retried)
	require.Zero(t, st.Lost)
}

// An outcome whose claim was taken over before it landed is refused by
// its compare-and-swap (ErrFenced) or never sent (the record watch told
// the handler first): either way the new claim stands, and the attempt
// counts as lost, never completed.
func TestPipelinedOutcomeOfTakenOverClaimRefused(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ctx := natstest.Context(t, 20*time.Second)
	m, err := kvlease.NewManager(ctx, e.js, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	bucket := e.led.Store().(*kvledger.KVStore).Name()
	gB, ok, err := m.TryAcquireKey(ctx, kvledger.NewClaimLeaseKey(bucket, "B"), 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, gB.StartRenewing(0))
	other := e.ledgerOn(n.NewJS(t))
	taken := make(chan kvledger.TaskState, 1)
	w := e.worker(worker.Config{}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("k", func(ctx context.Context, task *worker.Task) error {
			// B takes the claim over while the handler runs, and the
			// handler returns at once: its outcome races the news.
			rec, err := other.ClaimLeased(ctx, "B", task.Key(), "B", gB, time.Now())
			if err != nil {
				t.Errorf("B's takeover: %v", err)
			}
			taken <- rec
			return nil
		}))
	})
	e.submit(kvledger.Submission{Key: "t", Kind: "k"})
	b := natstest.Recv(t, taken, 10*time.Second, "B took the claim over")
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Lost == 1 }, "the attempt counted lost")
	require.Zero(t, w.Stats().Completed)
	s := e.state("t")
	require.Equal(t, kvledger.StatusClaimed, s.Status)
	require.Equal(t, b.Fence, s.Fence, "B's claim stands")
	require.Equal(t, kvledger.OwnerID("B"), s.Owner)
}

// ClaimAhead above MaxClaimAhead is refused by New, with the field named.
func TestClaimAheadConfig(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	_, err := worker.New(context.Background(), n.JS, e.led, worker.Config{LeaseBucket: e.leases, ClaimAhead: worker.MaxClaimAhead + 1})
	require.ErrorIs(t, err, worker.ErrInvalidConfig)
	require.Contains(t, err.Error(), "ClaimAhead")
	for _, ahead := range []int{-1, 0, worker.MaxClaimAhead} {
		w, err := worker.New(context.Background(), n.JS, e.led, worker.Config{LeaseBucket: e.leases, ClaimAhead: ahead})
		require.NoError(t, err, "ClaimAhead %d", ahead)
		require.NoError(t, w.Close(context.Background()))
	}
}

// A task claimed ahead lives and dies with the worker's lease like a
// running one: when the lease ends (an operator force-releases it here)
// its wait ends with the running handler's and it never starts under the
// lost claim. The running task is taken over (its lost attempt ran, so
// it counts); the one claimed ahead is given back, its attempt not
// counted, since its handler never ran (before, it was lost and counted).
func TestClaimAheadLostWithTheWorkersLease(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started := make(chan kvledger.IdempotencyKey, 4)
	var (
		ranAt    sync.Map // key → fences its handler ran at
		released atomic.Bool
	)
	w := e.worker(worker.Config{Owner: "A", Concurrency: 1, ClaimAhead: 1}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("k", func(ctx context.Context, task *worker.Task) error {
			ranAt.Store(fmt.Sprint(task.Key(), task.Fence()), true)
			if released.Load() {
				return nil
			}
			started <- task.Key()
			<-ctx.Done()
			return ctx.Err()
		}))
	})
	e.submit(kvledger.Submission{Key: "a", Kind: "k"})
	natstest.Recv(t, started, 10*time.Second, "a starts")
	e.submit(kvledger.Submission{Key: "b", Kind: "k"})
	natstest.Eventually(t, 10*time.Second, func() bool { return e.claimedBy("b", w.Owner()) }, "b claimed ahead")
	lease, fenceB := e.state("b").Lease, e.state("b").Fence
	require.Equal(t, e.state("a").Lease, lease)
	released.Store(true)

	ctx := natstest.Context(t, 20*time.Second)
	m, err := kvlease.NewManager(ctx, e.js, kvlease.Config{Bucket: e.leases})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	ok, err := m.ForceReleaseKey(ctx, lease)
	require.NoError(t, err)
	require.True(t, ok)

	final := e.waitFinal(10*time.Second, "a", "b")
	for _, k := range []kvledger.IdempotencyKey{"a", "b"} {
		require.Equal(t, kvledger.StatusCompleted, final[k].Status, "%s", k)
	}
	require.Equal(t, 2, final["a"].Attempts, "a: the lost attempt ran, and counts")
	require.Equal(t, 1, final["b"].Attempts, "b: the claim given back before its handler ran uses no attempt")
	natstest.Eventually(t, 10*time.Second, func() bool { s := w.Stats(); return s.Lost == 1 && s.Released == 1 },
		"a's claim counted lost, b's given back")
	h, err := e.led.History(ctx, "b")
	require.NoError(t, err)
	atts := kvledger.Attempts(h)
	require.Len(t, atts, 2, "%+v", atts)
	require.Equal(t, kvledger.AttemptReleased, atts[0].Outcome, "the record shows b's first claim given back: %+v", atts)
	require.Equal(t, 1, atts[0].N)
	require.Equal(t, kvledger.AttemptCompleted, atts[1].Outcome)
	require.Equal(t, 1, atts[1].N)
	_, ran := ranAt.Load(fmt.Sprint(kvledger.IdempotencyKey("b"), fenceB))
	require.False(t, ran, "b never ran under the lost claim")
}

// A task whose claim would use its last allowed attempt is not claimed
// ahead (a claim ahead lost with the worker counts an attempt although the
// handler never ran, which must not fail the task): it waits for a
// handler slot, and no task behind it is claimed ahead meanwhile.
func TestClaimAheadSparesTheLastAttempt(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	started, gate := make(chan kvledger.IdempotencyKey, 4), make(chan struct{})
	w := e.worker(worker.Config{Concurrency: 1, ClaimAhead: 2}, gatedHandler(t, "k", started, gate))
	e.submit(kvledger.Submission{Key: "a", Kind: "k"})
	natstest.Recv(t, started, 10*time.Second, "a starts")
	e.submit(kvledger.Submission{Key: "spare", Kind: "k", MaxAttempts: 2})
	natstest.Eventually(t, 10*time.Second, func() bool { return e.claimedBy("spare", w.Owner()) }, "a task with attempts to spare is claimed ahead")
	e.submit(kvledger.Submission{Key: "last", Kind: "k", MaxAttempts: 1})
	e.submit(kvledger.Submission{Key: "behind", Kind: "k"})
	natstest.Eventually(t, 10*time.Second, func() bool { return w.Stats().Ready == 2 }, "last and behind wait, ready")
	require.Equal(t, kvledger.StatusPending, e.state("last").Status, "not claimed ahead with its only attempt")
	require.Equal(t, kvledger.StatusPending, e.state("behind").Status, "nothing claimed ahead past it")
	var order []kvledger.IdempotencyKey
	for range 3 {
		gate <- struct{}{}
		order = append(order, natstest.Recv(t, started, 10*time.Second, "the next start"))
	}
	gate <- struct{}{}
	// Once a slot is free, "last" and "behind" are claimed together
	// (behind ahead of it), and start in order whichever claim lands
	// first.
	require.Equal(t, []kvledger.IdempotencyKey{"spare", "last", "behind"}, order)
	final := e.waitFinal(10*time.Second, "a", "spare", "last", "behind")
	require.Equal(t, 1, final["last"].Attempts)
	require.Equal(t, kvledger.StatusCompleted, final["last"].Status)
}
