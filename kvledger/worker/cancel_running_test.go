package worker_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvledger/worker"
)

// overlap counts the runs of one task in progress and remembers whether
// two ever ran at once.
type overlap struct {
	running, runs atomic.Int32
	twice         atomic.Bool
}

func (o *overlap) enter() {
	o.runs.Add(1)
	if o.running.Add(1) > 1 {
		o.twice.Store(true)
	}
}

func (o *overlap) leave() { o.running.Add(-1) }

// Cancel of a running task whose handler ignores its context for a
// while: the claim stays (phase cancelling) until the handler returned,
// so a Reopen meanwhile is refused and a second worker never starts the
// task beside the handler; the task then ends cancelled, not retried,
// and its dependent is blocked. Before, Cancel ended the claim at once:
// the Reopen went through and the second worker ran the task beside the
// first handler.
func TestCancelNeverRunsBesideTheHandler(t *testing.T) {
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	var runs overlap
	started := make(chan struct{}, 4)
	hold := make(chan struct{})
	var release sync.Once
	cause := make(chan error, 4)
	handler := func(ctx context.Context, task *worker.Task) error {
		runs.enter()
		defer runs.leave()
		started <- struct{}{}
		if task.Attempt() == 1 && runs.runs.Load() == 1 {
			<-ctx.Done() // told to stop…
			cause <- context.Cause(ctx)
			<-hold // …and ignoring it for a while
		}
		return nil // would complete: the cancel stands
	}
	reg := func(w *worker.Worker) { require.NoError(t, w.Handle("slow", handler)) }
	a := e.worker(worker.Config{Owner: "A"}, reg)
	e.submit(kvledger.Submission{Key: "slow", Kind: "slow"})
	e.submit(kvledger.Submission{Key: "after", Kind: "slow", Needs: []kvledger.IdempotencyKey{"slow"}})
	natstest.Recv(t, started, 10*time.Second, "A starts the task")
	b := e.worker(worker.Config{Owner: "B"}, reg)
	t.Cleanup(func() { release.Do(func() { close(hold) }) }) // on failure too, before the workers close

	ctx := natstest.Context(t, 20*time.Second)
	asked, err := e.led.Cancel(ctx, "operator", "slow", "no longer wanted", time.Now())
	require.NoError(t, err)
	require.Equal(t, kvledger.PhaseCancelling, asked.Phase(time.Now()), "the claim stays while the handler runs")
	require.Equal(t, kvledger.OwnerID("A"), asked.Owner)
	require.ErrorIs(t, natstest.Recv(t, cause, 5*time.Second, "the handler's ctx ends"), worker.ErrCancelled)
	_, err = e.led.Reopen(ctx, "operator", "slow", time.Now())
	require.ErrorIs(t, err, kvledger.ErrNotFailed, "no reopen while the cancelled handler runs")
	require.ErrorContains(t, err, "cancelling")
	again, err := e.led.Cancel(ctx, "operator", "slow", "", time.Now())
	require.NoError(t, err, "a second cancel leaves the request as it is")
	require.Equal(t, asked.Rev, again.Rev)
	require.Equal(t, kvledger.PhaseCancelling, e.state("slow").Phase(time.Now()))

	release.Do(func() { close(hold) })
	final := e.waitFinal(10*time.Second, "slow", "after")
	require.Equal(t, kvledger.PhaseCancelled, final["slow"].Phase(time.Now()), "ended cancelled, not completed or retried")
	require.Equal(t, "no longer wanted", final["slow"].LastError)
	require.Equal(t, 1, final["slow"].Attempts)
	require.Equal(t, kvledger.StatusBlocked, final["after"].Status)
	natstest.Eventually(t, 5*time.Second, func() bool { return a.Stats().Cancelled == 1 }, "A counts it cancelled")

	// Reopened once cancelled: it runs again, once.
	_, err = e.led.Reopen(ctx, "operator", "slow", time.Now())
	require.NoError(t, err)
	// Waited for by condition: a WaitFinal right after the Reopen can
	// answer from a view that has not seen the reopen yet (both keys
	// final there), on a loaded machine.
	natstest.Eventually(t, 20*time.Second, func() bool {
		return e.state("slow").Status == kvledger.StatusCompleted && e.state("after").Status == kvledger.StatusCompleted
	}, "the reopened task and its dependent complete")
	require.False(t, runs.twice.Load(), "two runs of the task at once")
	require.EqualValues(t, 0, b.Stats().Cancelled)
}

// A cancel requested of a task whose worker then dies (it can write no
// outcome): once the server expired the dead worker's lease, the next
// claim ends the task cancelled instead of running it, with no attempt
// counted, and blocks its dependent.
func TestCancelOfADeadWorkersTaskEndsItCancelled(t *testing.T) {
	const ttl = 2 * time.Second
	n := natstest.WithServer(t)
	e := newEnv(t, n.JS, 1)
	jsA := n.NewJS(t)
	ledA := e.ledgerOn(jsA)
	startedA := make(chan struct{}, 1)
	hold := make(chan struct{})
	a := e.startOn(jsA, ledA, worker.Config{ClaimTTL: ttl, Owner: "A"}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			startedA <- struct{}{}
			<-hold // stuck: it never sees its cancel in time
			return nil
		}))
	})
	t.Cleanup(func() { _ = closeWorker(a) }) // its connection is closed: errors are expected
	t.Cleanup(func() { close(hold) })
	e.submit(kvledger.Submission{Key: "job", Kind: "job"})
	e.submit(kvledger.Submission{Key: "dep", Kind: "job", Needs: []kvledger.IdempotencyKey{"job"}})
	natstest.Recv(t, startedA, 10*time.Second, "A starts the job")

	var ranB atomic.Int32
	b := e.worker(worker.Config{ClaimTTL: ttl, Owner: "B"}, func(w *worker.Worker) {
		require.NoError(t, w.Handle("job", func(ctx context.Context, task *worker.Task) error {
			ranB.Add(1)
			return nil
		}))
	})
	// A dies as the request is stored: it renews, writes and watches no more.
	jsA.Conn().Close()
	ctx := natstest.Context(t, 20*time.Second)
	asked, err := e.led.Cancel(ctx, "operator", "job", "stop it", time.Now())
	require.NoError(t, err)
	require.Equal(t, kvledger.PhaseCancelling, asked.Phase(time.Now()))

	final := e.waitFinal(ttl+10*time.Second, "job", "dep")
	require.Equal(t, kvledger.PhaseCancelled, final["job"].Phase(time.Now()))
	require.Equal(t, "stop it", final["job"].LastError)
	require.Equal(t, 1, final["job"].Attempts, "ending it cancelled counts no attempt")
	require.Greater(t, final["job"].Fence, asked.Fence, "the dead claimant is fenced")
	require.Equal(t, kvledger.StatusBlocked, final["dep"].Status)
	require.EqualValues(t, 0, ranB.Load(), "B never ran the cancelled task")
	natstest.Eventually(t, 5*time.Second, func() bool { return b.Stats().Cancelled == 1 }, "B counts it cancelled")
	h, err := e.led.History(ctx, "job")
	require.NoError(t, err)
	at := kvledger.Attempts(h)
	require.Len(t, at, 1)
	require.Equal(t, kvledger.AttemptCancelled, at[0].Outcome)
}
