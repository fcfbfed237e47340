package tasks_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/natscoord/natscoord/internal/testkit/natstest"
	"github.com/natscoord/natscoord/kvledger"
	"github.com/natscoord/natscoord/kvlock"
	"github.com/natscoord/natscoord/tasks"
)

type bigArgs struct {
	ID    uint64  `json:"id"`
	Neg   int64   `json:"neg"`
	Ratio float64 `json:"ratio"`
	Blob  []byte  `json:"blob"`
}

func (bigArgs) Kind() string { return "big" }

type failArgs struct{ Permanent bool }

func (failArgs) Kind() string { return "fail" }

type noKind struct{}

func (noKind) Kind() string { return "" }

type badJSON struct{ C chan int }

func (badJSON) Kind() string { return "bad" }

func newClient(t *testing.T, cfg tasks.Config) *tasks.Client {
	t.Helper()
	n := natstest.WithServer(t)
	c, err := tasks.NewClient(natstest.Context(t, 10*time.Second), n.JS, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close(context.Background())) })
	return c
}

// Arguments reach the handler as they were submitted: integers beyond
// 2^53, the extremes of int64, and bytes.
func TestArgsRoundTripExactly(t *testing.T) {
	c := newClient(t, tasks.Config{})
	got := make(chan bigArgs, 1)
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[bigArgs]) error {
		got <- tk.Args
		return nil
	}))
	ctx := natstest.Context(t, 20*time.Second)
	require.NoError(t, c.Start(ctx))
	want := bigArgs{ID: math.MaxUint64 - 1, Neg: math.MinInt64 + 1, Ratio: 0.1, Blob: []byte{0, 1, 0xff}}
	sub, err := c.Submit(ctx, want, nil)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(sub.Key), "big."), sub.Key)
	final, err := c.Wait(ctx, sub.Key)
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, final[sub.Key].Status, final[sub.Key].LastError)
	require.Equal(t, want, <-got)
	// The stored payload keeps the submitted digits after the claim and
	// the outcome rewrote the record.
	raw, err := json.Marshal(final[sub.Key].Task)
	require.NoError(t, err)
	require.Contains(t, string(raw), `"id":18446744073709551614`)
	require.Contains(t, string(raw), `"neg":-9223372036854775807`)
}

// A key is admitted once; bad arguments are refused before any write.
func TestSubmitKeysAndBadArgs(t *testing.T) {
	c := newClient(t, tasks.Config{})
	ctx := natstest.Context(t, 10*time.Second)
	opts := &tasks.SubmitOpts{Key: "k1", Delay: time.Hour}
	first, err := c.Submit(ctx, bigArgs{ID: 1}, opts)
	require.NoError(t, err)
	require.Equal(t, tasks.Submitted{Key: "k1", Admitted: true}, first)
	again, err := c.Submit(ctx, bigArgs{ID: 2}, opts)
	require.NoError(t, err)
	require.False(t, again.Admitted)
	rec, found, err := c.Get(ctx, "k1")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "big", rec.Kind)
	require.Equal(t, kvledger.PhaseScheduled, rec.Phase(time.Now()))

	// Priority and group reach the record, one by one and in a batch.
	_, err = c.Submit(ctx, bigArgs{}, &tasks.SubmitOpts{Key: "k2", Priority: 7, Group: "tenant-1", Delay: time.Hour})
	require.NoError(t, err)
	_, err = c.SubmitMany(ctx, []tasks.Submission{
		{Args: bigArgs{}, Opts: &tasks.SubmitOpts{Key: "k3", Priority: -3, Group: "tenant-2", Delay: time.Hour}},
		{Args: bigArgs{}, Opts: &tasks.SubmitOpts{Key: "k4", Priority: 9, Delay: time.Hour}},
	})
	require.NoError(t, err)
	for key, want := range map[kvledger.IdempotencyKey]struct {
		prio  int
		group string
	}{"k2": {7, "tenant-1"}, "k3": {-3, "tenant-2"}, "k4": {9, ""}} {
		rec, found, err := c.Get(ctx, key)
		require.NoError(t, err)
		require.True(t, found)
		require.Equal(t, want.prio, rec.Priority, key)
		require.Equal(t, want.group, rec.Group, key)
	}
	_, err = c.Submit(ctx, bigArgs{}, &tasks.SubmitOpts{Group: strings.Repeat("g", kvledger.MaxGroupBytes+1)})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)

	_, err = c.Submit(ctx, noKind{}, nil)
	require.ErrorIs(t, err, tasks.ErrInvalidArgs)
	_, err = c.Submit(ctx, badJSON{}, nil)
	require.ErrorIs(t, err, tasks.ErrInvalidArgs)
	_, err = c.Submit(ctx, nil, nil)
	require.ErrorIs(t, err, tasks.ErrInvalidArgs)
	_, err = c.Submit(ctx, bigArgs{}, &tasks.SubmitOpts{RunAt: time.Now(), Delay: time.Second})
	require.ErrorIs(t, err, kvledger.ErrInvalidState)
}

// A kind has one worker; workers are added before Start.
func TestAddWorkerRules(t *testing.T) {
	c := newClient(t, tasks.Config{})
	noop := func(context.Context, *tasks.Task[bigArgs]) error { return nil }
	require.NoError(t, tasks.AddWorker(c, noop))
	require.ErrorIs(t, tasks.AddWorker(c, noop), tasks.ErrDuplicateKind)
	require.ErrorIs(t, tasks.AddWorker[noKind](c, func(context.Context, *tasks.Task[noKind]) error { return nil }), tasks.ErrInvalidArgs)
	require.ErrorIs(t, tasks.AddWorker[bigArgs](c, nil), tasks.ErrInvalidConfig)
	require.NoError(t, c.Start(natstest.Context(t, 10*time.Second)))
	require.ErrorIs(t, tasks.AddWorker(c, func(context.Context, *tasks.Task[failArgs]) error { return nil }), tasks.ErrStarted)
	require.ErrorIs(t, c.Start(context.Background()), tasks.ErrStarted)
}

// An error is retried up to MaxAttempts; a permanent one fails at once.
func TestRetriesAndPermanentErrors(t *testing.T) {
	c := newClient(t, tasks.Config{MaxAttempts: 2})
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[failArgs]) error {
		if tk.Args.Permanent {
			return tasks.Permanent(errors.New("bad address"))
		}
		return fmt.Errorf("attempt %d of %d", tk.Attempt, tk.MaxAttempts)
	}))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))
	subs, err := c.SubmitMany(ctx, []tasks.Submission{
		{Args: failArgs{Permanent: true}, Opts: &tasks.SubmitOpts{Key: "perm"}},
		{Args: failArgs{}, Opts: &tasks.SubmitOpts{Key: "retry"}},
	})
	require.NoError(t, err)
	require.Equal(t, []tasks.Submitted{{Key: "perm", Admitted: true}, {Key: "retry", Admitted: true}}, subs)
	final, err := c.Wait(ctx, "perm", "retry")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusFailed, final["perm"].Status)
	require.Equal(t, 1, final["perm"].Attempts)
	require.Contains(t, final["perm"].LastError, "bad address")
	require.Equal(t, kvledger.StatusFailed, final["retry"].Status)
	require.Equal(t, 2, final["retry"].Attempts)
	require.Contains(t, final["retry"].LastError, "attempt 2 of 2")
}

// A task given back costs no attempt: with one allowed, it runs again
// and completes.
func TestGiveBackCostsNoAttempt(t *testing.T) {
	c := newClient(t, tasks.Config{MaxAttempts: 1})
	var calls atomic.Int32
	require.NoError(t, tasks.AddWorker(c, func(ctx context.Context, tk *tasks.Task[failArgs]) error {
		if calls.Add(1) == 1 {
			return tasks.GiveBack(errors.New("scratch disk missing"))
		}
		return nil
	}))
	ctx := natstest.Context(t, 30*time.Second)
	require.NoError(t, c.Start(ctx))
	_, err := c.SubmitMany(ctx, []tasks.Submission{{Args: failArgs{}, Opts: &tasks.SubmitOpts{Key: "gb"}}})
	require.NoError(t, err)
	final, err := c.Wait(ctx, "gb")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, final["gb"].Status)
	require.Equal(t, 1, final["gb"].Attempts)
	require.EqualValues(t, 2, calls.Load())
}

// List filters by phase, kind and prefix, a page at a time.
func TestListPages(t *testing.T) {
	c := newClient(t, tasks.Config{})
	ctx := natstest.Context(t, 10*time.Second)
	var subs []tasks.Submission
	for i := range 5 {
		subs = append(subs, tasks.Submission{Args: bigArgs{ID: uint64(i)}, Opts: &tasks.SubmitOpts{Key: kvledger.IdempotencyKey(fmt.Sprintf("a.%d", i))}})
	}
	subs = append(subs, tasks.Submission{Args: failArgs{}, Opts: &tasks.SubmitOpts{Key: "b.0", Delay: time.Hour}})
	_, err := c.SubmitMany(ctx, subs)
	require.NoError(t, err)

	p, err := c.List(ctx, tasks.Filter{Prefix: "a.", Limit: 2})
	require.NoError(t, err)
	require.Equal(t, []kvledger.IdempotencyKey{"a.0", "a.1"}, keys(p.Tasks))
	require.Equal(t, kvledger.IdempotencyKey("a.1"), p.Next)
	p, err = c.List(ctx, tasks.Filter{Prefix: "a.", Limit: 2, After: p.Next})
	require.NoError(t, err)
	require.Equal(t, []kvledger.IdempotencyKey{"a.2", "a.3"}, keys(p.Tasks))
	p, err = c.List(ctx, tasks.Filter{Prefix: "a.", Limit: 2, After: p.Next})
	require.NoError(t, err)
	require.Equal(t, []kvledger.IdempotencyKey{"a.4"}, keys(p.Tasks))
	require.Empty(t, p.Next)

	p, err = c.List(ctx, tasks.Filter{Phases: []kvledger.Phase{kvledger.PhaseScheduled}})
	require.NoError(t, err)
	require.Equal(t, []kvledger.IdempotencyKey{"b.0"}, keys(p.Tasks))
	p, err = c.List(ctx, tasks.Filter{Kind: "fail"})
	require.NoError(t, err)
	require.Equal(t, []kvledger.IdempotencyKey{"b.0"}, keys(p.Tasks))
}

func keys(ts []kvledger.TaskState) []kvledger.IdempotencyKey {
	out := make([]kvledger.IdempotencyKey, len(ts))
	for i, t := range ts {
		out[i] = t.Key
	}
	return out
}

// Counts are kept by the client's watch: after the first call, a
// submission shows in the next call without a listing.
func TestCountsFollowTheLedger(t *testing.T) {
	c := newClient(t, tasks.Config{})
	ctx := natstest.Context(t, 20*time.Second)
	_, err := c.Submit(ctx, bigArgs{}, &tasks.SubmitOpts{Key: "now"})
	require.NoError(t, err)
	counts, err := c.Counts(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, counts.Total)
	require.Equal(t, map[kvledger.Phase]int{kvledger.PhasePending: 1}, counts.ByKind["big"])

	_, err = c.Submit(ctx, failArgs{}, &tasks.SubmitOpts{Key: "later", Delay: time.Hour})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		counts, err := c.Counts(ctx)
		return err == nil && counts.ByKind["fail"][kvledger.PhaseScheduled] == 1 && counts.Total == 2
	}, 10*time.Second, 5*time.Millisecond)
}

// After Close every write of the client is refused with ErrClosed, a
// known failure (nothing was sent), and so is one through Ledger() with
// kvledger.ErrClosed: Close closes the store whose bucket answers them.
// They used to fail with the bucket's internal error, counted as an
// outcome unknown.
func TestWritesAfterCloseAreErrClosed(t *testing.T) {
	c := newClient(t, tasks.Config{})
	ctx := natstest.Context(t, 20*time.Second)
	_, err := c.Submit(ctx, bigArgs{ID: 1}, nil)
	require.NoError(t, err)
	require.NoError(t, c.Close(ctx))

	_, err = c.Submit(ctx, bigArgs{ID: 2}, nil)
	require.ErrorIs(t, err, tasks.ErrClosed, "Submit")
	_, err = c.SubmitMany(ctx, []tasks.Submission{{Args: bigArgs{ID: 3}}, {Args: bigArgs{ID: 4}}})
	require.ErrorIs(t, err, tasks.ErrClosed, "SubmitMany")
	_, err = c.Schedule(ctx, "nightly", "@daily", bigArgs{ID: 5}, nil)
	require.ErrorIs(t, err, tasks.ErrClosed, "Schedule")
	require.ErrorIs(t, c.Unschedule(ctx, "nightly"), tasks.ErrClosed, "Unschedule")
	_, err = c.Ledger().Submit(ctx, "someone", kvledger.Submission{Key: "direct", Seq: 1, Kind: "big", Task: json.RawMessage(`{}`)})
	require.ErrorIs(t, err, kvledger.ErrClosed, "a write through Ledger()")
}

// stuckClient is a started client whose one handler ignores its
// cancelled context: it runs until the returned release is called
// (idempotent, also called by t.Cleanup), and has started when
// stuckClient returns.
func stuckClient(t *testing.T) (*tasks.Client, func()) {
	t.Helper()
	n := natstest.WithServer(t)
	ctx := natstest.Context(t, 20*time.Second)
	c, err := tasks.NewClient(ctx, n.JS, tasks.Config{DrainTimeout: -1})
	require.NoError(t, err)
	started, unblock := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(unblock) }) }
	t.Cleanup(func() {
		release()
		require.NoError(t, c.Close(natstest.Context(t, 20*time.Second)))
	})
	require.NoError(t, tasks.AddWorker(c, func(context.Context, *tasks.Task[bigArgs]) error {
		started <- struct{}{}
		<-unblock // ignores its context
		return nil
	}))
	require.NoError(t, c.Start(ctx))
	_, err = c.Submit(ctx, bigArgs{ID: 1}, nil)
	require.NoError(t, err)
	natstest.Recv(t, started, 10*time.Second, "the handler starts")
	return c, release
}

// ledgerClosed reports whether a write through c.Ledger() is refused
// because the store is closed.
func ledgerClosed(t *testing.T, c *tasks.Client) bool {
	t.Helper()
	ctx := natstest.Context(t, 10*time.Second)
	_, err := c.Ledger().Submit(ctx, "someone", kvledger.Submission{Key: "probe", Seq: 1, Kind: "big", Task: json.RawMessage(`{}`)})
	if err != nil && !errors.Is(err, kvledger.ErrClosed) {
		require.NoError(t, err)
	}
	return errors.Is(err, kvledger.ErrClosed)
}

// A Close whose ctx ended while a handler ignored its cancelled context
// returns ctx's error and leaves the store open to that handler; the
// client closes the store by itself once the handler returns, with no
// second Close. It used to stay open until a second Close, and with it
// the store's reply subscription, until the connection closed.
func TestCloseWithEndedCtxClosesTheStoreWhenTheHandlerReturns(t *testing.T) {
	c, release := stuckClient(t)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.Close(ended), context.Canceled)
	require.False(t, ledgerClosed(t, c), "the store stays open while the handler runs")

	release()
	natstest.Eventually(t, 10*time.Second, func() bool { return ledgerClosed(t, c) }, "the store closes once the handler returned")
}

// A later Close waits, bounded by its own ctx, for what the first one
// left running, and then returns nil with the store closed.
func TestCloseAgainWaitsForTheHandler(t *testing.T) {
	c, release := stuckClient(t)
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.Close(ended), context.Canceled)
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	require.ErrorIs(t, c.Close(short), context.DeadlineExceeded, "the handler still runs")
	require.False(t, ledgerClosed(t, c))

	closed := make(chan error, 1)
	go func() { closed <- c.Close(natstest.Context(t, 20*time.Second)) }()
	release()
	require.NoError(t, natstest.Recv(t, closed, 20*time.Second, "Close returns once the handler returned"))
	require.True(t, ledgerClosed(t, c), "closed when Close returned")
}

// Every option Submit and SubmitMany refuse, on its own or against
// another, is ErrInvalidArgs (as the ledger's ErrInvalidState too), and
// nothing is written.
func TestSubmitOptionsRefusedAsErrInvalidArgs(t *testing.T) {
	c := newClient(t, tasks.Config{})
	ctx := natstest.Context(t, 10*time.Second)
	for name, o := range map[string]tasks.SubmitOpts{
		"run-at and delay":     {RunAt: time.Now().Add(time.Hour), Delay: time.Second},
		"negative delay":       {Delay: -time.Second},
		"negative attempts":    {MaxAttempts: -1},
		"negative timeout":     {Timeout: -time.Second},
		"timeout above a week": {Timeout: kvledger.MaxTimeout + 1},
		"group too long":       {Group: strings.Repeat("g", kvledger.MaxGroupBytes+1)},
		"group not utf-8":      {Group: "\xff"},
		"needs itself":         {Needs: []kvledger.IdempotencyKey{"opt"}},
		"empty need":           {Needs: []kvledger.IdempotencyKey{""}},
		"need with a newline":  {Needs: []kvledger.IdempotencyKey{"a\nb"}},
		"key with a control":   {Key: "opt\x00"},
		"key that is not utf8": {Key: "opt\xff"},
	} {
		if o.Key == "" {
			o.Key = "opt"
		}
		_, err := c.Submit(ctx, bigArgs{}, &o)
		require.ErrorIs(t, err, tasks.ErrInvalidArgs, name)
		require.ErrorIs(t, err, kvledger.ErrInvalidState, name)
		_, err = c.SubmitMany(ctx, []tasks.Submission{{Args: bigArgs{}, Opts: &tasks.SubmitOpts{Key: "fine"}}, {Args: bigArgs{}, Opts: &o}})
		require.ErrorIs(t, err, tasks.ErrInvalidArgs, name)
		for _, k := range []kvledger.IdempotencyKey{o.Key, "fine"} {
			_, found, err := c.Get(ctx, k)
			require.NoError(t, err)
			require.False(t, found, "%s: nothing written", name)
		}
	}
}

// Wait for a key that has no record is ErrNotFound at once, naming it,
// as `natscoord ledger wait` exits 1; a submission naming needs that
// have no record stands and says which (Submitted.MissingNeeds), and
// the task runs once they are submitted and complete.
func TestWaitForAMissingKeyAndMissingNeeds(t *testing.T) {
	c := newClient(t, tasks.Config{})
	ran := make(chan kvledger.IdempotencyKey, 4)
	require.NoError(t, tasks.AddWorker(c, func(_ context.Context, tk *tasks.Task[bigArgs]) error {
		ran <- tk.Key
		return nil
	}))
	ctx := natstest.Context(t, 20*time.Second)
	require.NoError(t, c.Start(ctx))

	_, err := c.Wait(ctx, "no-such-key")
	require.ErrorIs(t, err, tasks.ErrNotFound)
	require.ErrorIs(t, err, kvledger.ErrNoKey)
	require.Contains(t, err.Error(), "no-such-key")
	require.NoError(t, ctx.Err(), "refused at once, not at the end of ctx")

	later, err := c.Submit(ctx, bigArgs{}, &tasks.SubmitOpts{Key: "later", Needs: []kvledger.IdempotencyKey{"first", "second"}})
	require.NoError(t, err)
	require.True(t, later.Admitted)
	require.Equal(t, []kvledger.IdempotencyKey{"first", "second"}, later.MissingNeeds)
	subs, err := c.SubmitMany(ctx, []tasks.Submission{
		{Args: bigArgs{}, Opts: &tasks.SubmitOpts{Key: "first"}},
		{Args: bigArgs{}, Opts: &tasks.SubmitOpts{Key: "second", Needs: []kvledger.IdempotencyKey{"first", "third"}}},
	})
	require.NoError(t, err)
	require.Empty(t, subs[0].MissingNeeds)
	require.Equal(t, []kvledger.IdempotencyKey{"third"}, subs[1].MissingNeeds)
	_, err = c.Submit(ctx, bigArgs{}, &tasks.SubmitOpts{Key: "third"})
	require.NoError(t, err)
	again, err := c.Submit(ctx, bigArgs{}, &tasks.SubmitOpts{Key: "later", Needs: []kvledger.IdempotencyKey{"nope"}})
	require.NoError(t, err)
	require.False(t, again.Admitted)
	require.Empty(t, again.MissingNeeds, "nothing admitted, nothing to say")

	final, err := c.Wait(ctx, "later")
	require.NoError(t, err)
	require.Equal(t, kvledger.StatusCompleted, final["later"].Status, "submitted before its needs, it ran after them")
}

// The client's Clock is the time of its submissions, of the phases it
// reports and of its worker: on a manual clock a task delayed by an hour
// is scheduled until the clock has moved an hour on, then pending, then
// run. The client used to read the system clock for all three.
func TestClientRunsOnItsClock(t *testing.T) {
	clk := kvlock.NewManualClock(time.Time{})
	c := newClient(t, tasks.Config{Clock: clk})
	ctx := natstest.Context(t, 20*time.Second)
	ran := make(chan struct{}, 1)
	require.NoError(t, tasks.AddWorker(c, func(context.Context, *tasks.Task[failArgs]) error {
		ran <- struct{}{}
		return nil
	}))
	_, err := c.Submit(ctx, failArgs{}, &tasks.SubmitOpts{Key: "later", Delay: time.Hour})
	require.NoError(t, err)
	phase := func() kvledger.Phase {
		counts, err := c.Counts(ctx)
		require.NoError(t, err)
		for p := range counts.ByKind["fail"] {
			return p
		}
		return ""
	}
	require.Equal(t, kvledger.PhaseScheduled, phase())
	clk.Advance(time.Hour)
	require.Equal(t, kvledger.PhasePending, phase())
	require.NoError(t, c.Start(ctx))
	natstest.Recv(t, ran, 10*time.Second, "the run once the client's clock passed RunAt")
}
