package worker_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/clock"
	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// Close lets a quick handler finish, cancels a slow one after
// DrainTimeout and releases its claim: no claimed record is left, and
// another worker starts the released task at once.
func TestDrainLeavesNoClaimedTask(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	ncA := natstest.Connect(t, n.Server)
	jsA := natstest.JetStream(t, ncA)
	started := make(chan kvledger.IdempotencyKey, 2)
	var slowCause atomic.Value
	a := e.startOn(jsA, e.ledgerOn(jsA), worker.Config{Owner: "A", DrainTimeout: 2 * time.Second}, func(w *worker.Worker) {
		// Well within DrainTimeout, also on a loaded machine (its
		// outcome must land before the drain ends).
		require.NoError(t, w.Handle("quick", func(ctx context.Context, task *worker.Task) error {
			started <- task.Key()
			time.Sleep(100 * time.Millisecond)
			return nil
		}))
		require.NoError(t, w.Handle("slow", func(ctx context.Context, task *worker.Task) error {
			started <- task.Key()
			<-ctx.Done()
			slowCause.Store(context.Cause(ctx))
			return ctx.Err()
		}))
	})
	e.submit(kvledger.Submission{Key: "quick", Kind: "quick"})
	e.submit(kvledger.Submission{Key: "slow", Kind: "slow"})
	natstest.Recv(t, started, 10*time.Second, "first start")
	natstest.Recv(t, started, 10*time.Second, "second start")

	closed := time.Now()
	require.NoError(t, closeWorker(a))
	t.Logf("Close took %v", time.Since(closed))
	require.ErrorIs(t, slowCause.Load().(error), worker.ErrDraining)
	require.Equal(t, kvledger.StatusCompleted, e.state("quick").Status)
	slow := e.state("slow")
	require.Equal(t, kvledger.StatusPending, slow.Status, "released, not left claimed")
	require.Equal(t, 0, slow.Attempts, "a drained attempt does not count")
	require.EqualValues(t, 1, a.Stats().Released)

	picked := make(chan time.Time, 1)
	released := time.Now()
	e.worker(worker.Config{Owner: "B"}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("slow", func(ctx context.Context, task *worker.Task) error {
			picked <- time.Now()
			return nil
		}))
	})
	at := natstest.Recv(t, picked, 5*time.Second, "B starts the released task")
	t.Logf("released task picked up %v after B started", at.Sub(released))
	require.Equal(t, kvledger.StatusCompleted, e.waitFinal(5*time.Second, "slow")["slow"].Status)
}

// A started worker with nothing to do sends nothing on its connection.
func TestIdleWorkerSendsNothing(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	nc := natstest.Connect(t, n.Server)
	js := natstest.JetStream(t, nc)
	running, done := make(chan struct{}), make(chan struct{})
	w := e.startOn(js, e.ledgerOn(js), worker.Config{ClaimTTL: 2 * time.Second}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			close(running)
			<-done
			return nil
		}))
	})
	t.Cleanup(func() { require.NoError(t, closeWorker(w)) })
	// One task first, so renewals, releases and acks have all happened.
	// Its claim lease is read while the task runs: the idle second starts
	// once that very key is deleted (the idle release, ClaimTTL after the
	// attempt ended), not when a listing happens to show no key.
	e.submit(kvledger.Submission{Key: "warm", Kind: "job"})
	natstest.WaitClosed(t, running, 10*time.Second, "the warm-up task runs")
	held := e.leaseKeys()
	require.Len(t, held, 1, "the worker's claim lease while it runs")
	close(done)
	e.waitFinal(5*time.Second, "warm")
	natstest.Eventually(t, 5*time.Second, func() bool { return w.Stats().Running == 0 }, "idle")
	kv, err := e.js.KeyValue(natstest.Context(t, 5*time.Second), e.leases)
	require.NoError(t, err)
	natstest.Eventually(t, 20*time.Second, func() bool {
		_, err := kv.Get(natstest.Context(t, 5*time.Second), held[0])
		return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
	}, "the idle worker's lease %s is released", held[0])

	before := nc.Stats()
	time.Sleep(time.Second) // the measurement interval itself
	after := nc.Stats()
	t.Logf("idle second: out %d msgs / %d bytes, in %d msgs", after.OutMsgs-before.OutMsgs, after.OutBytes-before.OutBytes, after.InMsgs-before.InMsgs)
	require.Zero(t, after.OutMsgs-before.OutMsgs, "messages sent by an idle worker")
}

// Three workers running one @every schedule admit each period exactly
// once, and each period's task runs once.
func TestScheduleAdmitsEachPeriodOnce(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var mu sync.Mutex
	ran := map[kvledger.IdempotencyKey]int{}
	var ws []*worker.Worker
	for i := range 3 {
		ws = append(ws, e.worker(worker.Config{Owner: kvledger.OwnerID(string(rune('A' + i)))}, func(w *worker.Worker) {
			require.NoError(t, w.Schedule(worker.Schedule{Name: "tick", Spec: "@every 1s", Task: kvledger.Submission{Kind: "tick", Task: "hello"}}))
			require.NoError(t, w.Handle("tick", func(ctx context.Context, task *worker.Task) error {
				mu.Lock()
				ran[task.Key()]++
				mu.Unlock()
				return nil
			}))
		}))
	}
	admitted := func() (n uint64) {
		for _, w := range ws {
			n += w.Stats().Scheduled
		}
		return n
	}
	start := time.Now()
	natstest.Eventually(t, 20*time.Second, func() bool { return admitted() >= 3 }, "three periods admitted")
	// The workers go on admitting while the ledger is listed: the
	// listing holds at least the admissions counted before it, one key
	// per admission, and each key it holds gets counted (a worker counts
	// an admission once its write is answered, so after the listing).
	before := admitted()
	var keys []kvledger.IdempotencyKey
	require.NoError(t, e.led.Store().Range(natstest.Context(t, 5*time.Second), func(s kvledger.TaskState) bool {
		if strings.HasPrefix(string(s.Key), "schedule/tick/") {
			keys = append(keys, s.Key)
		}
		return true
	}))
	e.waitFinal(5*time.Second, keys...)
	t.Logf("%d periods in %v: %v", len(keys), time.Since(start), keys)
	require.GreaterOrEqual(t, len(keys), 3)
	require.GreaterOrEqual(t, uint64(len(keys)), before, "every counted admission is a key")
	natstest.Eventually(t, 5*time.Second, func() bool { return admitted() >= uint64(len(keys)) }, "every listed period counted")
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		require.Equal(t, 1, ran[k], "period %q ran once", k)
	}
	for i := 1; i < len(keys); i++ {
		require.NotEqual(t, keys[i-1], keys[i])
	}
}

// Concurrency limits hold per worker and per kind.
func TestConcurrencyLimits(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var cur, peak, curA, peakA atomic.Int32
	bump := func(c, p *atomic.Int32) func() {
		v := c.Add(1)
		for {
			old := p.Load()
			if v <= old || p.CompareAndSwap(old, v) {
				break
			}
		}
		return func() { c.Add(-1) }
	}
	h := func(ctx context.Context, task *worker.Task) error {
		defer bump(&cur, &peak)()
		if task.Kind() == "a" {
			defer bump(&curA, &peakA)()
		}
		time.Sleep(30 * time.Millisecond)
		return nil
	}
	e.worker(worker.Config{Concurrency: 3, KindConcurrency: map[string]int{"a": 1}}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("a", h))
		require.NoError(t, w.Handle("b", h))
	})
	var keys []kvledger.IdempotencyKey
	var subs []kvledger.Submission
	for i := range 12 {
		k := kvledger.IdempotencyKey("t" + string(rune('a'+i)))
		kind := "b"
		if i%2 == 0 {
			kind = "a"
		}
		subs = append(subs, kvledger.Submission{Key: k, Kind: kind})
		keys = append(keys, k)
	}
	oks, err := e.led.AdmitMany(natstest.Context(t, 10*time.Second), "test", subs)
	require.NoError(t, err)
	for _, ok := range oks {
		require.True(t, ok)
	}
	e.waitFinal(20*time.Second, keys...)
	require.LessOrEqual(t, peak.Load(), int32(3))
	require.Equal(t, int32(1), peakA.Load())
	require.GreaterOrEqual(t, peak.Load(), int32(2), "kinds run side by side")
}

// A worker whose clock jumps past many periods (a pause, a server that
// could not be reached) admits one task for them, not one per period.
func TestScheduleRunsMissedPeriodsOnce(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var offset atomic.Int64
	clk := clock.Func(func() time.Time { return time.Now().Add(time.Duration(offset.Load())) })
	w := e.worker(worker.Config{Clock: clk}, func(w *worker.Worker) {
		require.NoError(t, w.Schedule(worker.Schedule{Name: "tick", Spec: "@every 1s", Task: kvledger.Submission{Kind: "tick"}}))
		require.NoError(t, w.Handle("tick", func(context.Context, *worker.Task) error { return nil }))
	})
	require.Eventually(t, func() bool { return w.Stats().Scheduled >= 1 }, 10*time.Second, 5*time.Millisecond)
	offset.Store(int64(time.Minute)) // sixty periods go by at once
	require.Eventually(t, func() bool { return w.Stats().Scheduled >= 3 }, 10*time.Second, 5*time.Millisecond)
	require.NoError(t, w.Close(natstest.Context(t, 10*time.Second)))
	var keys []kvledger.IdempotencyKey
	require.NoError(t, e.led.Store().Range(natstest.Context(t, 5*time.Second), func(s kvledger.TaskState) bool {
		if strings.HasPrefix(string(s.Key), "schedule/tick/") {
			keys = append(keys, s.Key)
		}
		return true
	}))
	require.LessOrEqual(t, len(keys), 5, "the skipped minute was admitted once: %v", keys)
}

// A Close whose ctx ends while a handler ignores its cancelled context
// returns ctx's cause with the worker drained (Done); a later Close
// waits, bounded by its own ctx, for that handler, and returns nil once
// it has returned. It used to return at once, with the handler's
// goroutine still running.
func TestCloseAgainWaitsForAHandlerThatIgnoresItsContext(t *testing.T) {
	e, w, release, _ := stuckWorker(t)

	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, w.Close(ended), context.Canceled)
	select {
	case <-w.Done():
	default:
		t.Fatal("Done is not closed when the first Close has returned")
	}
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, w.Close(short), context.DeadlineExceeded, "the handler still runs")

	closed := make(chan error, 1)
	go func() { closed <- closeWorker(w) }()
	require.Equal(t, kvledger.StatusClaimed, e.state("stuck").Status, "kept while the handler runs")
	release()
	require.NoError(t, natstest.Recv(t, closed, 20*time.Second, "Close returns once the handler returned"))
	// The handler returned nil, after the drain: it did its work.
	require.Equal(t, kvledger.StatusCompleted, e.state("stuck").Status)
}

// A Close that comes while another Close drains (Run's, whose ctx never
// ends, held by a handler that ignores its context) returns when its own
// ctx ends: only the first call drains, the others wait for the same end
// within their own bound.
func TestCloseDuringAnotherCloseIsBoundedByItsCtx(t *testing.T) {
	e, w, release, cancelled := stuckWorker(t)

	first := make(chan error, 1)
	go func() { first <- w.Close(context.Background()) }() // as Run's Close
	natstest.WaitClosed(t, cancelled, 10*time.Second, "the first Close's drain cancelled the handler")
	require.Equal(t, kvledger.StatusClaimed, e.state("stuck").Status, "kept while the handler runs")
	second := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		second <- w.Close(ctx)
	}()
	require.ErrorIs(t, natstest.Recv(t, second, 10*time.Second, "the second Close returns with its ctx"), context.DeadlineExceeded)
	select {
	case err := <-first:
		t.Fatalf("the first Close returned (%v) with the handler still running", err)
	default:
	}
	release()
	require.NoError(t, natstest.Recv(t, first, 20*time.Second, "the first Close returns once the handler returned"))
}

// Close racing Start neither races on the worker's context nor leaves
// anything Start made running: a Close that comes once Start has begun
// cuts it short (Start returns ErrClosed) or follows it (nil), a Close
// before it makes Start return ErrClosed, and the leak check finds no
// goroutine of the worker.
func TestCloseRacingStart(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	for i := range 10 {
		w := natstest.Open(t, "worker", func(ctx context.Context) (*worker.Worker, error) {
			return worker.New(ctx, e.js, e.led, worker.Config{LeaseBucket: e.leases})
		})
		require.NoError(t, w.Handle("k", func(context.Context, *worker.Task) error { return nil }))
		startErr := make(chan error, 1)
		go func() { startErr <- w.Start(natstest.Context(t, 20*time.Second)) }()
		if i%2 == 0 { // Close during Start; the odd rounds let Close race its beginning
			natstest.Eventually(t, 10*time.Second, func() bool { return worker.Starting(w) }, "Start has begun")
		}
		require.NoError(t, closeWorker(w))
		if err := natstest.Recv(t, startErr, 20*time.Second, "Start returns"); err != nil {
			require.ErrorIs(t, err, worker.ErrClosed)
		}
	}
	started := e.worker(worker.Config{}, nil)
	require.ErrorIs(t, started.Start(natstest.Context(t, 5*time.Second)), worker.ErrStarted, "a second Start")
}

// stuckWorker is a worker (no drain timeout) running the task "stuck",
// whose handler ignores its context until release is called (also at
// the test's end, before the worker's Close); cancelled is closed when
// its context ends.
func stuckWorker(t *testing.T) (e *env, w *worker.Worker, release func(), cancelled <-chan struct{}) {
	t.Helper()
	n := natstest.WithServer(t)
	e = newEnv(t, n.JS, 1)
	started, unblock := make(chan struct{}, 1), make(chan struct{})
	ctxEnded := make(chan struct{})
	cancelled = ctxEnded
	w = e.worker(worker.Config{DrainTimeout: -1}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("stuck", func(ctx context.Context, _ *worker.Task) error {
			stop := context.AfterFunc(ctx, func() { close(ctxEnded) })
			defer stop()
			started <- struct{}{}
			<-unblock // ignores its context
			return nil
		}))
	})
	var once sync.Once
	release = func() { once.Do(func() { close(unblock) }) }
	t.Cleanup(release) // registered after the worker's Close: runs before it
	e.submit(kvledger.Submission{Key: "stuck", Kind: "stuck"})
	natstest.Recv(t, started, 10*time.Second, "the handler starts")
	return e, w, release, cancelled
}
